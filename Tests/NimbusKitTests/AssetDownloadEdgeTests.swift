import Foundation
import Testing
@testable import NimbusKit

/// A download written in one pass (`AssetDownload`, fed by the `AnswerCollector`) keeps the
/// download's rules, plain and sealed, async and blocking: an error answer is the server's error,
/// the answer limit cuts an endless body, cancelling stops it, and none leaves a file in the cache.
@Suite struct AssetDownloadEdgeTests {
    static let context = SealContext(container: "iCloud.com.nimbus.Tests", zone: "_defaultZone", recordType: "Photo",
                                     recordName: "p1", field: "image")

    func database(_ server: BadServer, cache: URL) -> Database {
        let container = Container(identifier: "iCloud.com.nimbus.Tests",
                                  configuration: NimbusConfiguration(serverURL: server.url, token: "t", assetCacheDirectory: cache))
        container.keyStore = MemoryKeyStore(KeyRing([AccountKey.generate()]))
        return container.privateDatabase
    }

    func asset(_ server: BadServer, size: Int64, sealed: Bool) -> Asset {
        var asset = Asset(fileChecksum: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", size: size,
                          downloadURL: server.url.appendingPathComponent("asset"))
        if sealed { asset.sealContext = Self.context }
        return asset
    }

    func leftovers(_ cache: URL) -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: cache.path)) ?? [] }

    /// The error of `body`, which must end within `seconds`.
    func failure(within seconds: Double, _ body: @escaping @Sendable () async throws -> Void) async throws -> any Error {
        let outcome = try await withThrowingTaskGroup(of: Result<Void, any Error>?.self) { group in
            group.addTask {
                do { try await body(); return .success(()) } catch { return .failure(error) }
            }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        switch outcome {
        case nil: throw TestFailure("still downloading after \(seconds) s")
        case .success?: throw TestFailure("the download succeeded")
        case .failure(let error)?: return error
        }
    }

    @Test(arguments: [false, true])
    func anErrorAnswerIsTheServersErrorAndLeavesNoFile(sealed: Bool) async throws {
        let server = try BadServer(answer: .htmlBadGateway)
        defer { server.stop() }
        let cache = temporaryDirectory("cache")
        let database = database(server, cache: cache)
        let asset = asset(server, size: 1000, sealed: sealed)
        let error = try await failure(within: 20) { _ = try await database.downloadAsset(asset) }
        #expect((error as? NimbusError)?.code == .serviceUnavailable, "\(error)")
        #expect((error as? NimbusError)?.reason.contains("502 Bad Gateway") == true, "\(error)")
        #expect(throws: NimbusError.self) { _ = try database.downloadAssetBlocking(asset) }
        #expect(leftovers(cache).isEmpty, "\(leftovers(cache))")
    }

    @Test(arguments: [false, true])
    func theAnswerLimitCutsAnEndlessBodyAndLeavesNoFile(sealed: Bool) async throws {
        let server = try BadServer(answer: .endless)
        defer { server.stop() }
        let cache = temporaryDirectory("cache")
        let database = database(server, cache: cache)
        let asset = asset(server, size: 1000, sealed: sealed)
        // The limit's error, not the opener's (the blanks are no sealed file) nor the checksum's.
        let error = try await failure(within: 20) { _ = try await database.downloadAsset(asset) }
        #expect((error as? NimbusError)?.code == .serverResponseBad, "\(error)")
        #expect((error as? NimbusError)?.reason.contains("passed \(1000 + (64 << 10)) bytes") == true, "\(error)")
        let blocking = try await failure(within: 20) { _ = try database.downloadAssetBlocking(asset) }
        #expect((blocking as? NimbusError)?.reason.contains("the download of an asset of 1000 bytes") == true, "\(blocking)")
        #expect(leftovers(cache).isEmpty, "\(leftovers(cache))")
    }

    @Test(arguments: [false, true])
    func cancellingADownloadStopsItAndLeavesNoFile(sealed: Bool) async throws {
        let server = try BadServer(answer: .endless)
        defer { server.stop() }
        let cache = temporaryDirectory("cache")
        let database = database(server, cache: cache)
        let asset = asset(server, size: 1 << 30, sealed: sealed)   // far from the limit
        let task = Task { try await database.downloadAsset(asset) }
        // Bounded generously: with every test running at once on 2 cores the task may start late.
        // Cancelled soon after (256 KiB): the endless body runs at 64 MB/s, and unread chunks
        // queue in this process, where EncryptedAssetStreamTests measures resident memory.
        if try await eventually(60, { server.bytesSent > 256 << 10 }) {
            // Plain: the partial file grows. Sealed: the blanks are no sealed file, so the partial
            // plaintext is gone at once while hashing goes on until the end (here: the cancel).
            #expect(leftovers(cache).isEmpty == sealed, "\(leftovers(cache)) while downloading")
        }
        task.cancel()
        let error = try await failure(within: 60) { _ = try await task.value }
        #expect(!(error is NimbusError) || (error as? NimbusError)?.code != .assetCorrupted, "\(error)")
        #expect(leftovers(cache).isEmpty, "\(leftovers(cache))")
        let sent = server.bytesSent
        try await Task.sleep(nanoseconds: 500_000_000)
        #expect(server.bytesSent - sent < 16 << 20, "the server is still sending")
    }
}
