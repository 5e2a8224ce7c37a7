import Foundation
import NimbusKit

// nimbus-sync: a small command-line client on NimbusKit's SyncEngine. It is an example of the
// engine's use, the client process the tests kill in the middle of sending, and the driver of
// bench/client.sh. Configured by NIMBUS_URL, NIMBUS_TOKEN, NIMBUS_ENVIRONMENT.

let usage = """
    USAGE: nimbus-sync <command> [arguments]
      enqueue STATE N PREFIX [ZONE]   enqueue N new Event records named PREFIX-000000… (durable on return)
      send STATE [BATCH] [PAUSE_MS]   send the outbox (BATCH records per request, pausing between requests)
      status STATE                    print pending, failed, last sync
      fetch STATE                     fetch every change; print how many records were applied
      watch STATE SECONDS             live mode; print each applied record name with its apply time
      churn STATE PREFIX              enqueue PREFIX-000000… one by one, sending 5 after every third, until killed
      pending-names STATE             print the record names still pending
      bench-enqueue STATE N PENDING…  N single enqueues at each outbox size, beside appends + fsync of the same bytes
      bench-raw-modify STATE N ZONE   bench/client.sh: raw records/modify of N records (400 per request)
      bench-raw-fetch STATE ZONE      raw records/changes reader of a zone (pages of 400)
      bench-fetch STATE ZONE          the engine's initial sync (fresh STATE)
      bench-outbox STATE N ZONE       enqueue N records (100 per call) and send until acknowledged
      bench-live STATE N              live delivery of N writes by NIMBUS_WRITER_TOKEN's device
      bench-assets-upload STATE N SIZE ZONE   N records with an asset of SIZE random bytes each
      bench-assets-download STATE ZONE        download them: NimbusKit, its prefetch, plain URLSession
      bench-e2e-modify STATE N ZONE           N records like bench-raw-modify's with `title` encrypted (NIMBUS_KEY_FILE)
      bench-e2e-asset STATE plain|sealed FILE ZONE   upload FILE (sealed: an encrypted asset field), download it
      bench-e2e-open STATE [N] [ROUNDS]       CPU ns per record decoding and opening pages, plain beside sealed (no server)
    CONTAINER: NIMBUS_CONTAINER (default iCloud.com.nimbus.SyncTool); NIMBUS_KEY_FILE: the account key file;
    NIMBUS_ASSET_CACHE: the asset cache's directory (default: the user's caches)
    """

/// Prints what the engine applies; keeps no records (so that large syncs measure the engine).
final class PrintingReplica: SyncEngineDelegate, @unchecked Sendable {
    // Safe: `applied` is only touched under `lock`.
    private let lock = NSLock()
    private var applied = 0
    let printNames: Bool
    /// CPU spent per applied record (an app's store writing it): `NIMBUS_BENCH_APPLY_NS` for the benches.
    let applyNanoseconds: UInt64

    init(printNames: Bool, applyNanoseconds: UInt64 = 0) {
        self.printNames = printNames
        self.applyNanoseconds = applyNanoseconds
    }

    var appliedCount: Int { lock.withLock { applied } }

    func syncEngine(_ engine: SyncEngine, apply changes: FetchedChanges) async throws {
        let now = Date().timeIntervalSince1970
        lock.withLock { applied += changes.modified.count }
        if applyNanoseconds > 0 {
            let until = DispatchTime.now().uptimeNanoseconds + applyNanoseconds * UInt64(changes.modified.count)
            while DispatchTime.now().uptimeNanoseconds < until {}
        }
        if printNames {
            for record in changes.modified { say("applied \(record.recordName) \(String(format: "%.6f", now))") }
        }
    }
}

/// One line on standard output, written at once (scripts wait for lines while the tool runs).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("nimbus-sync: \(message)\n".utf8))
    exit(64)
}

func run() async -> Int32 {
    var arguments = Array(CommandLine.arguments.dropFirst())
    guard arguments.count >= 2 else { fail(usage) }
    let command = arguments.removeFirst()
    let stateURL = URL(fileURLWithPath: arguments.removeFirst())
    let identifier = ProcessInfo.processInfo.environment["NIMBUS_CONTAINER"] ?? "iCloud.com.nimbus.SyncTool"
    var container: Container
    do { container = try Container(identifier: identifier) } catch { fail("\(error)") }
    if let cache = ProcessInfo.processInfo.environment["NIMBUS_ASSET_CACHE"], !cache.isEmpty {
        var configuration = container.configuration
        configuration.assetCacheDirectory = URL(fileURLWithPath: cache, isDirectory: true)
        container = Container(identifier: identifier, configuration: configuration)
    }
    EncryptionBench.configure(container)  // NIMBUS_KEY_FILE: the account key of encrypted fields
    let replica = PrintingReplica(printNames: command == "watch")
    let engine: SyncEngine
    do {
        engine = try SyncEngine(database: container.privateDatabase, stateURL: stateURL, delegate: replica)
    } catch { fail("\(error)") }
    do {
        switch command {
        case "enqueue":
            guard arguments.count >= 2, let count = Int(arguments[0]) else { fail(usage) }
            let zone = arguments.count > 2 ? ZoneID(arguments[2]) : .default
            let changes = (0..<count).map { n -> PendingChange in
                var record = Record(recordType: "Event", id: RecordID(recordName: String(format: "%@-%06d", arguments[1], n), zoneID: zone))
                record.set("title", "event \(n)")
                record.set("timestamp", Date())
                return .save(record)
            }
            try await engine.enqueue(changes)
            say("enqueued \(count)")
        case "send":
            await engine.setBatchSize(arguments.first.flatMap(Int.init) ?? 400)
            let pause = arguments.count > 1 ? (Double(arguments[1]) ?? 0) / 1000 : 0
            while await engine.status.pendingCount > 0 {
                let before = await engine.status.pendingCount
                await engine.sendChanges(maxRequests: pause > 0 ? 1 : nil)
                let status = await engine.status
                say("pending \(status.pendingCount)")
                if status.pendingCount == before, let error = status.lastError {
                    FileHandle.standardError.write(Data("nimbus-sync: \(error)\n".utf8))
                    try await Task.sleep(nanoseconds: 200_000_000)
                }
                if pause > 0 { try await Task.sleep(nanoseconds: UInt64(pause * 1e9)) }
            }
            say("sent")
        case "status":
            let status = await engine.status
            say("pending: \(status.pendingCount)")
            say("failed: \(status.failed.count)")
            for failed in status.failed { say("  \(failed.recordID): \(failed.cause.code.rawValue) \(failed.cause.reason)") }
            say("last-sync: \(status.lastSync.map { ISO8601DateFormatter().string(from: $0) } ?? "never")")
        case "fetch":
            try await engine.fetchChanges()
            say("applied \(replica.appliedCount)")
        case "watch":
            guard let seconds = arguments.first.flatMap(Double.init) else { fail(usage) }
            await engine.startLive()
            say("watching")
            try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
            await engine.stopLive()
        case "churn":
            guard let prefix = arguments.first else { fail(usage) }
            try await Churn.churn(engine, prefix: prefix)
        case "pending-names":
            await Churn.pendingNames(engine)
        case "bench-enqueue":
            try await EnqueueBench.run(arguments, stateURL: stateURL, container: container)
        case _ where command.hasPrefix("bench-e2e-"):
            try await EncryptionBench.run(command, arguments, container: container)
        case _ where command.hasPrefix("bench-assets-"):
            try await AssetBench.run(command, arguments, container: container)
        case _ where command.hasPrefix("bench-"):
            try await Bench.run(command, arguments, container: container, stateURL: stateURL)
        default:
            fail(usage)
        }
    } catch {
        FileHandle.standardError.write(Data("nimbus-sync: \(error)\n".utf8))
        return 1
    }
    return 0
}

exit(await run())
