import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NimbusKit

/// The measurements of bench/client.sh: the engine beside a raw client doing the same requests
/// with nothing but URLSession and JSONSerialization. Each prints one `result` line.
enum Bench {
    static func run(_ command: String, _ arguments: [String], container: Container, stateURL: URL) async throws {
        let zone = ZoneID(arguments.last ?? "bench")
        switch command {
        case "bench-raw-modify":
            guard let count = arguments.first.flatMap(Int.init) else { fail(usage) }
            try await container.privateDatabase.createZone(zone)
            let seconds = try await rawModify(count: count, zone: zone, container: container)
            say("result raw-modify records=\(count) seconds=\(format(seconds)) per_second=\(format(Double(count) / seconds))")
        case "bench-raw-fetch":
            let (count, seconds) = try await rawFetch(zone: zone, container: container)
            say("result raw-fetch records=\(count) seconds=\(format(seconds)) per_second=\(format(Double(count) / seconds)) peak_rss_mb=\(peakMemoryMB())")
        case "bench-fetch":
            // NIMBUS_BENCH_APPLY_NS: the delegate spends that much CPU per record, as an app's store would.
            let applyNanoseconds = ProcessInfo.processInfo.environment["NIMBUS_BENCH_APPLY_NS"].flatMap { UInt64($0) } ?? 0
            let replica = PrintingReplica(printNames: false, applyNanoseconds: applyNanoseconds)
            let engine = try SyncEngine(database: container.privateDatabase, stateURL: stateURL, delegate: replica)
            let (start, cpuStart) = (Date(), EnqueueBench.counters().cpu)
            try await engine.fetchChanges()
            let (seconds, cpu) = (Date().timeIntervalSince(start), EnqueueBench.counters().cpu - cpuStart)
            let count = replica.appliedCount
            // cpu_s: the process's CPU (user + system, every thread) for the fetch: steadier than seconds on a loaded machine.
            say("result engine-fetch records=\(count) seconds=\(format(seconds)) per_second=\(format(Double(count) / seconds)) "
                + "cpu_s=\(String(format: "%.3f", cpu)) peak_rss_mb=\(peakMemoryMB())")
        case "bench-outbox":
            guard let count = arguments.first.flatMap(Int.init) else { fail(usage) }
            try await container.privateDatabase.createZone(zone)
            let engine = try SyncEngine(database: container.privateDatabase, stateURL: stateURL,
                                        delegate: PrintingReplica(printNames: false))
            let start = Date()
            // The app enqueues as events happen: 100 per call, each durable on return.
            for chunk in stride(from: 0, to: count, by: 100) {
                try await engine.enqueue((chunk..<min(count, chunk + 100)).map { .save(benchRecord($0, zone: zone)) })
            }
            let enqueued = Date().timeIntervalSince(start)
            while await engine.status.pendingCount > 0 {
                await engine.sendChanges()
                if let error = await engine.status.lastError { throw error }
            }
            let seconds = Date().timeIntervalSince(start)
            say("result engine-outbox records=\(count) seconds=\(format(seconds)) per_second=\(format(Double(count) / seconds)) enqueue_seconds=\(format(enqueued))")
        case "bench-live":
            guard let count = arguments.first.flatMap(Int.init) else { fail(usage) }
            try await live(count: count, container: container, stateURL: stateURL)
        default:
            fail(usage)
        }
    }

    static func benchRecord(_ n: Int, zone: ZoneID) -> Record {
        var record = Record(recordType: "Event", id: RecordID(recordName: String(format: "b-%07d", n), zoneID: zone))
        record.set("title", "event number \(n)")
        record.set("appName", "Safari")
        record.set("timestamp", Date(timeIntervalSince1970: 1_795_000_000 + Double(n)))
        return record
    }

    /// records/modify in requests of 400 creates, built by hand.
    static func rawModify(count: Int, zone: ZoneID, container: Container) async throws -> Double {
        let session = URLSession(configuration: .ephemeral)
        let url = databaseURL(container, "records/modify")
        let start = Date()
        for chunk in stride(from: 0, to: count, by: 400) {
            let operations: [[String: Any]] = (chunk..<min(count, chunk + 400)).map { n in
                ["operationType": "create", "record": [
                    "recordName": String(format: "r-%07d", n), "recordType": "Event",
                    "fields": ["title": ["value": "event number \(n)", "type": "STRING"],
                               "appName": ["value": "Safari", "type": "STRING"],
                               "timestamp": ["value": 1_795_000_000_000 + n * 1000, "type": "TIMESTAMP"]]] as [String: Any]]
            }
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            request.setValue("Bearer \(container.configuration.token)", forHTTPHeaderField: "Authorization")
            request.httpBody = try JSONSerialization.data(withJSONObject: ["zoneID": ["zoneName": zone.zoneName], "operations": operations])
            let (_, response) = try await session.data(for: request)
            guard (response as? HTTPURLResponse)?.statusCode == 200 else { fail("raw modify answered \(response)") }
        }
        return Date().timeIntervalSince(start)
    }

    /// records/changes from no token to the end, pages of 400, parsed with JSONSerialization.
    static func rawFetch(zone: ZoneID, container: Container) async throws -> (Int, Double) {
        let session = URLSession(configuration: .ephemeral)
        let url = databaseURL(container, "records/changes")
        var token: String? = nil
        var count = 0
        let start = Date()
        while true {
            var body: [String: Any] = ["zoneID": ["zoneName": zone.zoneName], "resultsLimit": 400]
            if let token { body["syncToken"] = token }
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            request.setValue("Bearer \(container.configuration.token)", forHTTPHeaderField: "Authorization")
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            let (data, _) = try await session.data(for: request)
            guard let answer = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { fail("not JSON") }
            count += (answer["records"] as? [Any])?.count ?? 0
            token = answer["syncToken"] as? String
            if (answer["moreComing"] as? Bool) != true { break }
        }
        return (count, Date().timeIntervalSince(start))
    }

    /// A live engine receiving `count` writes made one after another by another device.
    static func live(count: Int, container: Container, stateURL: URL) async throws {
        let replica = TimingReplica()
        let engine = try SyncEngine(database: container.privateDatabase, stateURL: stateURL, delegate: replica)
        try await engine.fetchChanges()
        await engine.startLive()
        try await Task.sleep(nanoseconds: 500_000_000)
        guard let writerToken = ProcessInfo.processInfo.environment["NIMBUS_WRITER_TOKEN"] else { fail("set NIMBUS_WRITER_TOKEN") }
        let writer = Container(identifier: container.identifier, configuration: NimbusConfiguration(
            serverURL: container.configuration.serverURL, token: writerToken)).privateDatabase
        var acknowledged: [(String, Date)] = []
        for n in 0..<count {
            var record = Record(recordType: "Event", id: RecordID(recordName: "live-\(n)-\(UUID().uuidString.prefix(6))"))
            record.set("title", "live \(n)")
            let saved = try await writer.save(record)
            acknowledged.append((saved.recordName, Date()))
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        let deadline = Date().addingTimeInterval(30)
        while replica.count(of: acknowledged.map(\.0)) < count && Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
        await engine.stopLive()
        let delays = acknowledged.compactMap { name, ack in replica.appliedAt(name).map { max(0, $0.timeIntervalSince(ack) * 1000) } }.sorted()
        guard !delays.isEmpty else { fail("no write reached the live engine") }
        let p50 = delays[delays.count / 2]
        let p99 = delays[min(delays.count - 1, Int(Double(delays.count) * 0.99))]
        say("result live writes=\(count) delivered=\(delays.count) p50_ms=\(format(p50)) p99_ms=\(format(p99)) max_ms=\(format(delays.last ?? 0))")
    }

    static func databaseURL(_ container: Container, _ operation: String) -> URL {
        let base = container.configuration.serverURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let path = "/database/1/\(container.identifier)/\(container.configuration.environment.rawValue)/private/\(operation)"
        guard let url = URL(string: base + path) else { fail("bad server URL \(base)") }
        return url
    }

    /// The process's peak resident memory (VmHWM) in MB.
    static func peakMemoryMB() -> String {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kb = Double(line.split(separator: " ").dropFirst().first ?? "") else { return "n/a" }
        return format(kb / 1024)
    }

    static func format(_ value: Double) -> String { String(format: "%.1f", value) }
}

/// Remembers when each record was applied.
final class TimingReplica: SyncEngineDelegate, @unchecked Sendable {
    // Safe: `applied` is only touched under `lock`.
    private let lock = NSLock()
    private var applied: [String: Date] = [:]

    func syncEngine(_ engine: SyncEngine, apply changes: FetchedChanges) async throws {
        let now = Date()
        lock.withLock { for record in changes.modified where applied[record.recordName] == nil { applied[record.recordName] = now } }
    }

    func appliedAt(_ name: String) -> Date? { lock.withLock { applied[name] } }
    func count(of names: [String]) -> Int { lock.withLock { names.filter { applied[$0] != nil }.count } }
}
