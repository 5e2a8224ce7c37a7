import Foundation
@testable import NimbusKit
import Testing

/// A fetch's asset prefetch asks for many downloads at once; past the device's burst the server
/// answers THROTTLED. The prefetch waits out `retryAfter` (`Database.prefetchRateLimitWaits`
/// times at most) instead of failing the fetch: a first sync of a zone with many assets (Maccy's
/// 200 images) slows down, as CloudKit's does, rather than stopping.
@Suite struct PrefetchRateLimitTests {
    @Test func aPrefetchPastTheBurstWaitsOutTheRateLimitAndGetsEveryFile() async throws {
        // Two requests a second after a burst of four, for each device's token.
        let server = try TestServer.start(["--requests-per-second-per-token", "2", "--request-burst-per-token", "4"])
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("prefetch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let writer = server.container(token: try server.device(user: "pre", device: "mac")).privateDatabase
        var ids: [RecordID] = []
        for n in 0..<6 {
            let file = directory.appendingPathComponent("photo-\(n)")
            try Data("photo \(n) ".utf8 + Array(repeating: UInt8(n), count: 2000)).write(to: file)
            var record = Record(recordType: "Photo", id: RecordID(recordName: "p\(n)"))
            record["image"] = .asset(Asset(fileURL: file))
            ids.append(try await writer.save(record).id)
            try await Task.sleep(nanoseconds: 1_600_000_000)  // the three requests of a save, refilled
        }
        let reader = server.container(token: try server.device(user: "pre", device: "phone"),
                                      cache: directory.appendingPathComponent("cache")).privateDatabase
        // One lookup of the reader's four: six downloads four at a time meet THROTTLED.
        let records = try await reader.lookup(ids).map { try $0.get() }
        let fetched = try await reader.downloadingAssets(of: records)
        for (n, record) in fetched.enumerated() {
            guard case .asset(let asset)? = record["image"], let file = asset.fileURL else {
                Issue.record("record \(n) has no local file")
                continue
            }
            #expect(try Data(contentsOf: file).prefix(8) == Data("photo \(n) ".utf8).prefix(8))
        }
    }
}
