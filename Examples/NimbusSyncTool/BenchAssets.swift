import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NimbusKit

/// bench/client.sh's asset downloads: N assets of SIZE bytes downloaded by NimbusKit (one after
/// another, verified against their checksums, into a fresh cache; then the fetch prefetch, four
/// at a time) beside plain URLSession GETs of the same URLs (no verification). Run from a debug
/// and a release build to compare. Each prints one `result` line.
enum AssetBench {
    static func run(_ command: String, _ arguments: [String], container: Container) async throws {
        let zone = ZoneID(arguments.last ?? "assets")
        let database = container.privateDatabase
        switch command {
        case "bench-assets-upload":
            guard arguments.count >= 2, let count = Int(arguments[0]), let size = Int(arguments[1]) else { fail(usage) }
            try await database.createZone(zone)
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            var operations: [RecordOperation] = []
            for n in 0..<count {
                let file = folder.appendingPathComponent("asset-\(n)")
                try Data((0..<size).map { _ in UInt8.random(in: 0...255) }).write(to: file)
                var record = Record(recordType: "Photo", id: RecordID(recordName: "photo-\(n)", zoneID: zone))
                record.set("image", Asset(fileURL: file))
                operations.append(.save(record))
            }
            for result in try await database.modify(operations) { _ = try result.get() }
            say("result assets-upload assets=\(count) bytes=\(size)")
        case "bench-assets-download":
            let records = try await database.changes(in: zone, since: nil, resultsLimit: 400).modified
            let assets = records.compactMap { $0.fields["image"]?.assetValue }
            let (first, firstCache) = freshContainer(container)
            let (second, secondCache) = freshContainer(container)
            defer { for cache in [firstCache, secondCache] { try? FileManager.default.removeItem(at: cache) } }
            let sequential = try await time {
                for asset in assets { _ = try await first.privateDatabase.downloadAsset(asset) }
            }
            let prefetch = try await time { _ = try await second.privateDatabase.downloadingAssets(of: records) }
            let plain = try await time {
                let session = URLSession(configuration: .ephemeral)
                for asset in assets {
                    guard let url = asset.downloadURL else { continue }
                    var request = URLRequest(url: url)
                    request.setValue("Bearer \(container.configuration.token)", forHTTPHeaderField: "Authorization")
                    let (data, _) = try await session.data(for: request)
                    guard data.count == Int(asset.size ?? -1) else { fail("a plain download got \(data.count) bytes") }
                }
            }
            say("result assets-download assets=\(assets.count) nimbuskit_s=\(String(format: "%.3f", sequential)) "
                + "prefetch_s=\(String(format: "%.3f", prefetch)) urlsession_s=\(String(format: "%.3f", plain))")
        default:
            fail(usage)
        }
    }

    /// The same server and token with an empty asset cache, so every download goes to the server.
    private static func freshContainer(_ container: Container) -> (Container, URL) {
        var configuration = container.configuration
        let cache = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-cache-\(UUID().uuidString)")
        configuration.assetCacheDirectory = cache
        return (Container(identifier: container.identifier, configuration: configuration), cache)
    }

    private static func time(_ work: () async throws -> Void) async throws -> Double {
        let start = Date()
        try await work()
        return Date().timeIntervalSince(start)
    }
}
