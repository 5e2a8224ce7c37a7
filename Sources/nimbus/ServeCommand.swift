import CLinux
import Foundation
import NimbusAdmin
import NimbusAPI
import NimbusCore
import NimbusHTTP
import NimbusPostgres
import NimbusPush
import NimbusPushSender
import NimbusStore
import NimbusSupport

/// `nimbus serve`: the composition root. Starts the database (embedded unless a URL is given),
/// applies migrations, serves HTTP until SIGINT/SIGTERM, then shuts down in order.
enum ServeCommand {
    /// Database connections: 4 per core. On 2 cores, 8 wrote ~19% more records/s than 16 into one
    /// zone (bench/records.sh): connections beyond what the cores run only wait inside PostgreSQL.
    static let defaultPoolSize = max(4, 4 * ProcessInfo.processInfo.activeProcessorCount)

    static let limitOptions: [OptionSpec] = Limits().namedValues.map { limit in
        OptionSpec(name: limit.name.kebabCased, valueName: "n", environment: "NIMBUS_\(limit.name.screamingSnakeCased)",
                   defaultValue: String(limit.value), help: "Limit \(limit.name).")
    }

    static let spec = CommandSpec(
        name: "serve",
        overview: "Run the Nimbus server.",
        usage: "nimbus serve [--listen <host:port>] [--data-dir <path>] [--database-url <url>] [options]",
        options: [
            OptionSpec(name: "listen", valueName: "host:port", environment: "NIMBUS_LISTEN", defaultValue: "127.0.0.1:8080",
                       help: "Address to serve on; port 0 picks a free port."),
            adminListenOption,
        ] + DatabaseOptions.specs + [
            OptionSpec(name: "public-url", valueName: "url", environment: "NIMBUS_PUBLIC_URL",
                       help: "Base of absolute URLs in answers (webcourierURL, downloadURL), e.g. https://sync.example.org; default: from the request's Host."),
            OptionSpec(name: "trusted-proxy", valueName: "cidr,...", environment: "NIMBUS_TRUSTED_PROXY",
                       help: "Proxies whose Forwarded / X-Forwarded-For, -Proto and -Host headers give the client's address and the scheme and host of absolute URLs, e.g. 127.0.0.1/32,10.0.0.0/8; default none (the headers are ignored)."),
            OptionSpec(name: "database-pooler", valueName: "none|transaction", environment: "NIMBUS_DATABASE_POOLER", defaultValue: "none",
                       help: "What is between Nimbus and PostgreSQL: transaction for PgBouncer's transaction pooling (no named prepared statements or session settings; needs --listen-database-url)."),
            OptionSpec(name: "listen-database-url", valueName: "url", environment: "NIMBUS_LISTEN_DATABASE_URL",
                       help: "A direct connection to PostgreSQL, not through a transaction pooler, for LISTEN (and migrations); default: --database-url.",
                       isConnectionString: true),
            OptionSpec(name: "pool-size", valueName: "n", environment: "NIMBUS_POOL_SIZE", defaultValue: String(defaultPoolSize),
                       help: "Maximum database connections (default 4 per core: more only queue inside PostgreSQL)."),
            OptionSpec(name: "write-batches", valueName: "n", environment: "NIMBUS_WRITE_BATCHES",
                       defaultValue: String(Store.defaultWriteBatchesInFlight),
                       help: "Combined create statements in flight at once; concurrent creates share them (fewer: larger batches)."),
            OptionSpec(name: "event-loops", valueName: "n", environment: "NIMBUS_EVENT_LOOPS",
                       defaultValue: String(max(ProcessInfo.processInfo.activeProcessorCount, 1)), help: "HTTP event loop threads."),
            OptionSpec(name: "backlog", valueName: "n", environment: "NIMBUS_BACKLOG", defaultValue: "1024", help: "Listen backlog."),
            OptionSpec(name: "prune-interval", valueName: "duration", environment: "NIMBUS_PRUNE_INTERVAL", defaultValue: "1h",
                       help: "How often the pruning job runs (one instance at a time across instances); 0s disables it."),
            OptionSpec(name: "asset-grace", valueName: "duration", environment: "NIMBUS_ASSET_GRACE", defaultValue: "24h",
                       help: "How long an asset no record references is kept."),
            OptionSpec(name: "drain-timeout", valueName: "seconds", environment: "NIMBUS_DRAIN_TIMEOUT", defaultValue: "10",
                       help: "On shutdown, how long in-flight requests may take to finish."),
        ] + PushOptions.specs + PushRelayOptions.specs + limitOptions
    )

    static func run(_ argv: [String]) async throws -> Int32 {
        guard let arguments = try spec.parse(argv) else { return 0 }
        try arguments.refusePositionals()
        try DatabaseOptions.configureLogging(arguments)
        keepFreedMemoryForReuse()
        let logger = Logger(subsystem: "serve")
        let (host, port) = try parseListen(arguments.value("listen") ?? "127.0.0.1:8080")
        if let admin = arguments.value("admin-listen"), admin != "off" { _ = try parseListen(admin, option: "admin-listen") }
        var limits = Limits()
        for limit in Limits().namedValues {
            if let value = try arguments.integer(limit.name.kebabCased) { _ = limits.set(limit.name, to: value) }
        }
        var http = HTTPServer.Configuration()
        http.host = host
        http.port = port
        http.backlog = Int32(clamping: try arguments.integer("backlog") ?? 1024)
        http.eventLoopCount = max(try arguments.integer("event-loops") ?? http.eventLoopCount, 1)
        http.drainTimeoutSeconds = try arguments.seconds("drain-timeout") ?? 10
        http.maxConnections = limits.maxConnections
        http.headerTimeoutSeconds = Double(limits.headerTimeoutSeconds)
        http.bodyTimeoutSeconds = Double(limits.bodyTimeoutSeconds)
        http.minBodyBytesPerSecond = Double(max(limits.minBodyBytesPerSecond, 0))
        http.keepAliveTimeoutSeconds = Double(limits.keepAliveTimeoutSeconds)
        http.parserLimits.maxRequestLineBytes = limits.maxRequestLineBytes
        http.parserLimits.maxHeaderLineBytes = limits.maxHeaderLineBytes
        http.parserLimits.maxHeaderBytes = limits.maxHeaderBytes
        http.parserLimits.maxHeaderCount = limits.maxHeaderCount
        http.parserLimits.maxBodyBytes = limits.maxRequestBytes
        http.errorResponse = ErrorResponse.forHTTPCore
        http.trustedProxies = try trustedProxies(arguments)
        let pooler = try databasePooler(arguments)
        let poolSize = max(try arguments.integer("pool-size") ?? defaultPoolSize, 1)
        let writeBatches = max(try arguments.integer("write-batches") ?? Store.defaultWriteBatchesInFlight, 1)
        for name in ["prune-interval", "asset-grace"] {
            if let text = arguments.value(name), DurationText.seconds(text) == nil {
                throw UsageError(message: "option '--\(name)' needs a duration such as 1h, 30m, 24h or 0s, not '\(text)'", command: "serve")
            }
        }
        let push = try PushOptions.settings(arguments)
        let pushTransport = try PushOptions.makeTransport(arguments, settings: push)
        guard limits.maxAssetBytes <= 1 << 30 else {
            throw UsageError(message: "option '--max-asset-bytes' may be at most 1073741824 (1 GiB)", command: "serve")
        }

        logger.info("starting nimbus \(Nimbus.version)", [
            "listen": "\(host):\(port)",
            "database": arguments.value("database-url") == nil ? "embedded in \(arguments.value("data-dir") ?? "./.nimbus")" : "external",
            "poolSize": poolSize, "writeBatches": writeBatches, "eventLoops": http.eventLoopCount,
            "push": push.mode.rawValue, "apnsTopics": push.topics.keys.sorted().joined(separator: ","),
        ])
        logger.info("limits: " + limits.namedValues.map { "\($0.name)=\($0.value)" }.joined(separator: " "))

        // Signals first: a SIGTERM during a slow start-up still shuts down cleanly.
        let shutdownRequested = ShutdownSignal()
        let trap = SignalTrap { signal in
            logger.notice("received signal \(signal); shutting down")
            shutdownRequested.fire()
        }

        let database = try DatabaseOptions.open(arguments)
        var poolConfiguration = PGPool.Configuration(url: database.url)
        poolConfiguration.maxConnections = poolSize
        poolConfiguration.pooler = pooler
        let pool = PGPool(configuration: poolConfiguration)
        let store: Store
        do {
            store = try await Store.open(pool: pool, hubCapacity: .init(maxPerDevice: limits.maxWaitersPerDevice, maxTotal: limits.maxWaiters),
                                         writeBatchesInFlight: writeBatches, push: push)
        } catch {
            pool.close()
            database.close()
            throw error
        }
        let listener = store.startListening(url: arguments.value("listen-database-url") ?? database.url)
        let metrics = Metrics()
        let api = API(store: store, limits: limits, metrics: metrics, publicURL: arguments.value("public-url"))
        http.bodyStreamLimit = api.bodyStreamLimit
        let server = HTTPServer(configuration: http, handler: api.handler)
        metrics.addGauge("nimbus_http_open_connections", help: "Open client connections.") { Double(server.connectionCount) }
        metrics.addGauge("nimbus_db_pool_in_use", help: "Database connections lent out.") { Double(store.poolStatistics.inUse) }
        metrics.addGauge("nimbus_db_pool_idle", help: "Idle database connections.") { Double(store.poolStatistics.idle) }
        metrics.addGauge("nimbus_db_pool_max", help: "Database pool size.") { Double(store.poolStatistics.max) }
        metrics.addCounter("nimbus_create_batches_total", help: "Statements the create fast path ran (shared by concurrent requests).") {
            Double(store.createBatchCounts.batches)
        }
        metrics.addCounter("nimbus_create_batched_requests_total", help: "Requests those statements carried.") {
            Double(store.createBatchCounts.requests)
        }
        metrics.addCounter("nimbus_create_batch_seconds_total", help: "Seconds spent running those statements.") {
            store.createBatchCounts.seconds
        }
        metrics.addGauge("nimbus_longpoll_waiters", help: "Parked long-poll requests.") { Double(store.hub.count) }
        metrics.addGauge("nimbus_listener_connected", help: "1 while the LISTEN connection is up.") { listener.isConnected ? 1 : 0 }
        PushMetrics.register(in: metrics, store: store)

        let bound: (host: String, port: Int)
        do {
            bound = try server.start()
        } catch {
            listener.stop()
            pool.close()
            database.close()
            throw error
        }
        logger.notice("listening on http://\(bound.host):\(bound.port)")
        let schedule = PruneSchedule(options: pruneOptions(limits: limits, arguments: arguments))
        let adminServer: HTTPServer?
        do {
            adminServer = try startAdminServer(arguments: arguments, store: store, limits: limits, metrics: metrics, deviceListener: bound,
                                               pruneSchedule: schedule, logger: logger)
        } catch {
            await server.shutdown()
            listener.stop()
            pool.close()
            database.close()
            throw error
        }
        let pruner = startPruner(store: store, limits: limits, arguments: arguments, schedule: schedule, logger: logger)
        let pushSender = pushTransport.map { PushSender(store: store, transport: $0, limits: limits) }
        let pushSending = pushSender.map { sender in Task { await sender.run() } }
        if pushSender != nil { logger.info("push sender started", ["apnsLibraries": APNsClient.libraryDescription]) }

        await shutdownRequested.wait()
        // Parked long-polls are answered at once (empty, same token), then in-flight requests
        // get the drain timeout, then LISTEN and the pool close.
        pruner?.cancel()
        store.hub.close()
        await adminServer?.shutdown()
        await server.shutdown()
        // The sender claims nothing more and lets its sends finish (each bounded by the APNs
        // request timeout); a push claimed but unanswered is claimed again after its lease.
        pushSender?.stop()
        await pushSending?.value
        pushTransport?.shutdown()
        await store.flushAnnouncements()
        listener.stop()
        pool.close()
        database.close()
        withExtendedLifetime(trap) {}
        logger.notice("stopped")
        return 0
    }

    /// The scheduled pruning job: first a minute after start, then every interval. Instances
    /// share it through an advisory lock; the one holding it prunes, the others skip.
    static func startPruner(store: Store, limits: Limits, arguments: ParsedArguments, schedule: PruneSchedule,
                            logger: Logger) -> Task<Void, Never>? {
        guard let text = arguments.value("prune-interval"), let interval = DurationText.seconds(text), interval > 0 else {
            logger.info("pruning job disabled")
            return nil
        }
        let prune = schedule.options
        return Task {
            var delay = min(interval, 60)
            while !Task.isCancelled {
                schedule.setNext(Date().addingTimeInterval(TimeInterval(delay)))
                try? await Task.sleep(nanoseconds: UInt64(delay) * 1_000_000_000)
                delay = interval
                if Task.isCancelled { return }
                do {
                    if let report = try await store.pruner.prune(prune, limits: limits) {
                        let records = report.counts.reduce(0) { $0 + $1.records }, tombstones = report.counts.reduce(0) { $0 + $1.tombstones }
                        logger.info("pruned", ["records": records, "tombstones": tombstones, "assets": report.assets,
                                               "notifications": report.notifications, "seconds": report.seconds])
                    }
                } catch let error as SyncError where error.code == .tryAgainLater {
                    // The database is unreachable or a standby (a failover): try again soon.
                    delay = min(interval, 30)
                    logger.warning("pruning waits for the database; trying again", ["error": "\(error)", "retryIn": delay])
                } catch {
                    logger.warning("pruning failed; will retry at the next interval", ["error": "\(error)"])
                }
            }
        }
    }

    /// What the scheduled job (and the console's runs) prune: the retention limits and `--asset-grace`.
    static func pruneOptions(limits: Limits, arguments: ParsedArguments) -> PruneOptions {
        var options = PruneOptions()
        options.tombstonesOlderThanSeconds = Int64(limits.tombstoneRetentionDays) * 86_400
        options.notificationRetentionSeconds = Int64(limits.notificationRetentionDays) * 86_400
        options.assetGraceSeconds = arguments.value("asset-grace").flatMap(DurationText.seconds) ?? 86_400
        return options
    }

    /// `--trusted-proxy`: CIDR blocks separated by commas.
    static func trustedProxies(_ arguments: ParsedArguments) throws -> TrustedProxies {
        guard let text = arguments.value("trusted-proxy"), !text.isEmpty else { return TrustedProxies() }
        var ranges: [AddressRange] = []
        for part in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !part.isEmpty {
            guard let range = AddressRange(part) else {
                throw UsageError(message: "option '--trusted-proxy' needs addresses or CIDR blocks such as 127.0.0.1, 10.0.0.0/8 or fd00::/8, "
                                 + "separated by commas; '\(part)' is not one", command: "serve")
            }
            ranges.append(range)
        }
        return TrustedProxies(ranges)
    }

    /// `--database-pooler`, checked against the options it needs.
    static func databasePooler(_ arguments: ParsedArguments) throws -> PGPool.Pooler {
        let text = arguments.value("database-pooler") ?? "none"
        guard let pooler = PGPool.Pooler(rawValue: text) else {
            throw UsageError(message: "option '--database-pooler' is none or transaction, not '\(text)' (a pooler in session mode needs none)",
                             command: "serve")
        }
        if arguments.value("listen-database-url") != nil, arguments.value("database-url") == nil {
            throw UsageError(message: "option '--listen-database-url' goes with --database-url (the embedded database has no pooler)", command: "serve")
        }
        if pooler == .transaction {
            guard arguments.value("database-url") != nil else {
                throw UsageError(message: "option '--database-pooler transaction' goes with --database-url, the pooler's address", command: "serve")
            }
            guard arguments.value("listen-database-url") != nil else {
                throw UsageError(message: "with '--database-pooler transaction', pass --listen-database-url with a direct connection to PostgreSQL: "
                                 + "a LISTEN through a transaction pooler never hears a notification", command: "serve")
            }
        }
        return pooler
    }

    static func parseListen(_ text: String, option: String = "listen") throws -> (String, Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw UsageError(message: "option '--\(option)' needs HOST:PORT\(option == "listen" ? "" : " or off"), not '\(text)'", command: "serve")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }
}

/// A one-shot event that async code can wait for (fired from a signal handler's queue).
final class ShutdownSignal: Sendable {
    private let state = Lock<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.fired else { return [] }
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.fired { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}

/// Answers of ~100 KB (a page of changes) are allocated and freed by every request. With glibc's
/// defaults each free hands the top of the thread's heap back to the kernel and the next answer
/// faults fresh pages in: 17% of the server's CPU in a change-feed benchmark. Keep up to 8 MiB of
/// free memory per heap, and serve blocks up to 1 MiB from the heaps rather than from new mappings.
private func keepFreedMemoryForReuse() {
    _ = mallopt(M_MMAP_THRESHOLD, 1 << 20)
    _ = mallopt(M_TRIM_THRESHOLD, 8 << 20)
}
