import Foundation
import NimbusPostgres
import NimbusSupport

/// The options every command that touches the database takes, and the start-up they share:
/// an embedded cluster unless a URL is given, then migrations.
enum DatabaseOptions {
    static let specs: [OptionSpec] = [
        OptionSpec(name: "data-dir", valueName: "path", environment: "NIMBUS_DATA_DIR", defaultValue: "./.nimbus",
                   help: "Directory for the embedded PostgreSQL cluster and server state."),
        OptionSpec(name: "database-url", valueName: "url", environment: "NIMBUS_DATABASE_URL",
                   help: "Use this PostgreSQL server (libpq URI) instead of the embedded one.", isConnectionString: true),
        OptionSpec(name: "migrations-dir", valueName: "path", environment: "NIMBUS_MIGRATIONS_DIR",
                   help: "Directory of NNNN_name.sql migrations (default: found beside the checkout or binary)."),
        OptionSpec(name: "log-level", valueName: "level", environment: "NIMBUS_LOG_LEVEL", defaultValue: "info",
                   help: "debug, info, notice, warning or error."),
        OptionSpec(name: "log-format", valueName: "format", environment: "NIMBUS_LOG_FORMAT", defaultValue: "text",
                   help: "text or json."),
    ]

    /// A database ready for use: its URL and, when embedded, the cluster to stop at the end.
    struct Opened {
        var url: String
        var cluster: EmbeddedCluster?

        func close() { cluster?.stop() }
    }

    static func configureLogging(_ arguments: ParsedArguments, defaultLevel: Logger.Level = .info) throws {
        guard let level = Logger.Level(name: arguments.values["log-level"] ?? ProcessInfo.processInfo.environment["NIMBUS_LOG_LEVEL"] ?? "\(defaultLevel)") else {
            throw UsageError(message: "option '--log-level' must be debug, info, notice, warning or error", command: arguments.spec.name)
        }
        guard let format = Logger.Format(rawValue: arguments.value("log-format") ?? "text") else {
            throw UsageError(message: "option '--log-format' must be text or json", command: arguments.spec.name)
        }
        Logger.configure(level: level, format: format)
    }

    /// Starts the embedded cluster when no URL is given, then applies migrations (unless
    /// `migrating` is false: a restore applies them itself).
    static func open(_ arguments: ParsedArguments, migrating: Bool = true) throws -> Opened {
        let migrator = try Migrator(directory: migrationsDirectory(arguments))
        let opened: Opened
        if let url = arguments.value("database-url") {
            opened = Opened(url: url, cluster: nil)
        } else {
            let cluster = try EmbeddedCluster(dataDirectory: dataDirectory(arguments))
            do {
                try cluster.start()
            } catch {
                cluster.stop()
                throw error
            }
            opened = Opened(url: cluster.url, cluster: cluster)
        }
        guard migrating else { return opened }
        do {
            // The migration lock is a session advisory lock: never through a transaction pooler.
            try migrateOnPrimary(migrator, url: arguments.value("listen-database-url") ?? opened.url)
        } catch {
            opened.close()
            throw error
        }
        return opened
    }

    /// Applies the migrations on the primary only. A standby's refusal, a server starting up or
    /// shutting down, or a proxy with no primary behind it (a failover in progress) is waited out
    /// for up to `waitSeconds`, trying again every second; any other error ends it at once.
    static func migrateOnPrimary(_ migrator: Migrator, url: String, waitSeconds: Double = 60) throws {
        let logger = Logger(subsystem: "migrate")
        let deadline = monotonicNanoseconds() + UInt64(waitSeconds * 1e9)
        while true {
            do {
                let connection = try PGConnection.connect(url: url, connectTimeoutSeconds: 10, applicationName: "nimbus-migrate")
                try connection.requirePrimary()
                try migrator.migrate(connection)
                return
            } catch let error as PGError where error.isFailoverInProgress && monotonicNanoseconds() < deadline {
                logger.warning("the database cannot take migrations now (a failover in progress?); retrying in 1 s", ["error": "\(error)"])
                Thread.sleep(forTimeInterval: 1)
            }
        }
    }

    /// For admin commands: the running server's embedded cluster when one holds the data
    /// directory, else the database opened as `serve` would (and stopped afterwards). Never
    /// creates one: a command pointed at the wrong place says so instead of working on an
    /// empty new database.
    static func openForAdmin(_ arguments: ParsedArguments) throws -> Opened {
        try requireExistingDatabase(arguments)
        do {
            return try open(arguments)
        } catch let error as PGError where error.kind == .clusterInUse {
            guard let url = EmbeddedCluster.runningServerURL(dataDirectory: dataDirectory(arguments)) else { throw error }
            return Opened(url: url, cluster: nil)
        }
    }

    /// The data directory, made absolute.
    static func dataDirectory(_ arguments: ParsedArguments) -> URL {
        URL(fileURLWithPath: arguments.value("data-dir") ?? "./.nimbus").standardizedFileURL
    }

    /// Throws unless the data directory holds a cluster, or the URL's database has Nimbus's tables.
    static func requireExistingDatabase(_ arguments: ParsedArguments) throws {
        let hint = "pass --data-dir or --database-url (`nimbus serve` or `nimbus migrate` creates one)"
        if let url = arguments.value("database-url") {
            let connection = try PGConnection.connect(url: url, connectTimeoutSeconds: 10, applicationName: "nimbus-admin")
            guard try Migrator.appliedVersions(connection) != nil else {
                throw PGError(.noDatabase, "no Nimbus database at \(redacted(url)) — \(hint)")
            }
        } else {
            let directory = dataDirectory(arguments)
            guard EmbeddedCluster.hasCluster(dataDirectory: directory) else {
                throw PGError(.noDatabase, "no Nimbus database at \(directory.path) — \(hint)")
            }
        }
    }

    /// A libpq URL without its secrets, for messages.
    static func redacted(_ url: String) -> String {
        ConnectionString.redacted(url)
    }

    /// `--migrations-dir`, else `./migrations`, else beside the binary (a SwiftPM build tree or
    /// an installed `share/nimbus/migrations`).
    static func migrationsDirectory(_ arguments: ParsedArguments) throws -> URL {
        if let path = arguments.value("migrations-dir") {
            return URL(fileURLWithPath: path)
        }
        var candidates = [URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("migrations")]
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            let directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
            candidates.append(directory.appendingPathComponent("../../../migrations"))   // .build/<triple>/<config>/nimbus
            candidates.append(directory.appendingPathComponent("../share/nimbus/migrations"))
            candidates.append(directory.appendingPathComponent("migrations"))
        }
        for candidate in candidates {
            let path = candidate.standardizedFileURL.path
            if let names = try? FileManager.default.contentsOfDirectory(atPath: path), names.contains(where: { $0.hasSuffix(".sql") }) {
                return candidate.standardizedFileURL
            }
        }
        throw PGError(.migration, "no migrations directory found (looked in \(candidates.map { $0.standardizedFileURL.path }.joined(separator: ", "))); pass --migrations-dir")
    }
}
