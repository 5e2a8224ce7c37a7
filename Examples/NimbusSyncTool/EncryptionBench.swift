import Foundation
import NimbusKit

/// bench/client.sh's encrypted-vs-plain rows (issue 30): records with one encrypted field loaded
/// for the engine's initial sync, and one large asset uploaded and downloaded plain or sealed.
/// The account key is the file NIMBUS_KEY_FILE names (made when missing). Each prints one `result` line.
enum EncryptionBench {
    /// Gives the container the key of NIMBUS_KEY_FILE, when it is set.
    static func configure(_ container: Container) {
        guard let path = ProcessInfo.processInfo.environment["NIMBUS_KEY_FILE"] else { return }
        let store = FileKeyStore(fileURL: URL(fileURLWithPath: path))
        _ = try? store.loadOrCreate()
        container.keyStore = store
    }

    static func run(_ command: String, _ arguments: [String], container: Container) async throws {
        switch command {
        case "bench-e2e-modify":
            // bench-e2e-modify STATE N ZONE: N records like bench-raw-modify's, `title` encrypted, 400 per request.
            guard arguments.count >= 2, let count = Int(arguments[0]) else { fail(usage) }
            let zone = ZoneID(arguments[1])
            let database = container.privateDatabase
            try await database.createZone(zone)
            let start = Date()
            for chunk in stride(from: 0, to: count, by: 400) {
                let operations = (chunk..<min(count, chunk + 400)).map { n -> RecordOperation in
                    // Its own type: Event's title is plain in the container's schema (a field cannot turn encrypted).
                    var record = Record(recordType: "SealedEvent", id: RecordID(recordName: String(format: "r-%07d", n), zoneID: zone))
                    record.encryptedValues["title"] = .string("event number \(n)")
                    record.set("appName", "Safari")
                    record.set("timestamp", Date(timeIntervalSince1970: 1_795_000_000 + Double(n)))
                    return .save(record)
                }
                for result in try await database.modify(operations) { _ = try result.get() }
            }
            let seconds = Date().timeIntervalSince(start)
            say("result e2e-modify records=\(count) seconds=\(Bench.format(seconds)) per_second=\(Bench.format(Double(count) / seconds))")
        case "bench-e2e-open":
            // bench-e2e-open STATE [N] [ROUNDS]: decoding and opening pages, plain beside sealed (no server).
            try OpenBench.run(arguments, container: container)
        case "bench-e2e-asset":
            // bench-e2e-asset STATE plain|sealed FILE ZONE: upload FILE, then download it into an empty cache.
            guard arguments.count >= 3, ["plain", "sealed"].contains(arguments[0]) else { fail(usage) }
            let sealed = arguments[0] == "sealed"
            let file = URL(fileURLWithPath: arguments[1])
            let zone = ZoneID(arguments[2])
            if sealed { container.encryptedAssetFields = ["Photo": ["image"]] }
            try await container.privateDatabase.createZone(zone)
            var record = Record(recordType: "Photo", id: RecordID(recordName: "photo-\(arguments[0])", zoneID: zone))
            record.set("image", Asset(fileURL: file))
            let (start, uploadCPUStart) = (Date(), EnqueueBench.counters().cpu)
            _ = try await container.privateDatabase.save(record)
            let (upload, uploadCPU) = (Date().timeIntervalSince(start), EnqueueBench.counters().cpu - uploadCPUStart)
            var configuration = container.configuration
            let cache = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-cache-\(UUID().uuidString)")
            configuration.assetCacheDirectory = cache
            defer { try? FileManager.default.removeItem(at: cache) }
            let reader = Container(identifier: container.identifier, configuration: configuration)
            reader.keyStore = container.keyStore
            reader.encryptedAssetFields = container.encryptedAssetFields
            // The download's own peak and CPU time (the process's, every thread): the wall-clock
            // time is noisy on a loaded machine.
            let uploadPeak = Bench.peakMemoryMB()
            resetPeakMemory()
            let (downloadStart, cpuStart) = (Date(), EnqueueBench.counters().cpu)
            let fetched = try await reader.privateDatabase.record(for: record.id)
            guard let asset = fetched["image"]?.assetValue, asset.isEncrypted == sealed else { fail("the fetched record has no \(arguments[0]) asset") }
            let opened = try await reader.privateDatabase.downloadAsset(asset)
            let (download, downloadCPU) = (Date().timeIntervalSince(downloadStart), EnqueueBench.counters().cpu - cpuStart)
            let downloadPeak = Bench.peakMemoryMB()
            let peak = max(Double(uploadPeak) ?? 0, Double(downloadPeak) ?? 0)
            guard try sameBytes(opened, file) else { fail("the downloaded file differs from the uploaded one") }
            say("result e2e-asset mode=\(arguments[0]) bytes=\(asset.size ?? -1) upload_s=\(String(format: "%.3f", upload)) "
                + "upload_cpu_s=\(String(format: "%.3f", uploadCPU)) download_s=\(String(format: "%.3f", download)) download_cpu_s=\(String(format: "%.3f", downloadCPU)) "
                + "peak_rss_mb=\(Bench.format(peak)) upload_peak_rss_mb=\(uploadPeak) download_peak_rss_mb=\(downloadPeak)")
        default:
            fail(usage)
        }
    }

    /// Starts the process's peak resident memory (VmHWM) over from the current (Linux: writing 5
    /// to /proc/self/clear_refs); elsewhere nothing.
    static func resetPeakMemory() {
        try? Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
    }

    /// Whether two files hold the same bytes, compared 1 MiB at a time.
    static func sameBytes(_ a: URL, _ b: URL) throws -> Bool {
        let (x, y) = (try FileHandle(forReadingFrom: a), try FileHandle(forReadingFrom: b))
        defer { try? x.close(); try? y.close() }
        while true {
            let (p, q) = (try x.read(upToCount: 1 << 20) ?? Data(), try y.read(upToCount: 1 << 20) ?? Data())
            if p != q { return false }
            if p.isEmpty { return true }
        }
    }
}
