import Foundation
import Testing
@testable import NimbusKit

@Suite("Assets against the real server")
struct AssetTests {
    @Test func aTenMebibyteAssetRoundTripsVerifiedCorruptionIsAnErrorAndTheCacheServesTheSecondAccess() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let macToken = try server.device(user: "pix", device: "mac")
        let phoneToken = try server.device(user: "pix", device: "phone")
        let mac = server.container(token: macToken).privateDatabase
        let folder = temporaryDirectory("asset")
        let file = folder.appendingPathComponent("photo.bin")
        var bytes = Data(count: 10 << 20)
        bytes.withUnsafeMutableBytes { buffer in
            for i in stride(from: 0, to: buffer.count, by: 8) { buffer.storeBytes(of: UInt64.random(in: 0...UInt64.max), toByteOffset: i, as: UInt64.self) }
        }
        try bytes.write(to: file)
        var record = event("failed auth")
        record.set("photoAsset", Asset(fileURL: file))
        let saved = try await mac.save(record)
        let checksum = saved.fields["photoAsset"]?.assetValue?.fileChecksum
        #expect(checksum == Checksum.of(bytes))
        #expect(saved.fields["photoAsset"]?.assetValue?.size == Int64(bytes.count))

        // The phone fetches the record and downloads the bytes, verified.
        let cache = temporaryDirectory("cache")
        let phone = server.container(token: phoneToken, cache: cache).privateDatabase
        let fetched = try await phone.record(for: record.id)
        guard let asset = fetched.fields["photoAsset"]?.assetValue else { throw TestFailure("no asset on the fetched record") }
        #expect(asset.downloadURL != nil)
        let downloaded = try await phone.downloadAsset(asset)
        #expect(try Data(contentsOf: downloaded) == bytes)

        // The second access comes from the cache: it works with the server stopped.
        server.stop()
        let again = try await phone.downloadAsset(asset)
        #expect(again == downloaded)
        try server.restart()

        // Through a proxy that flips a byte: an error, and no file in the cache.
        let proxy = try ChaosProxy(upstreamPort: server.port)
        defer { proxy.stop() }
        proxy.setMode(.corruptBodies)
        let freshCache = temporaryDirectory("cache")
        let viaProxy = server.container(token: phoneToken, url: proxy.url, cache: freshCache).privateDatabase
        proxy.setMode(.pass)
        let proxied = try await viaProxy.record(for: record.id)
        proxy.setMode(.corruptBodies)
        guard let proxiedAsset = proxied.fields["photoAsset"]?.assetValue else { throw TestFailure("no asset through the proxy") }
        do {
            _ = try await viaProxy.downloadAsset(proxiedAsset)
            Issue.record("a corrupted download became a file")
        } catch let error as NimbusError {
            #expect(error.code == .assetCorrupted)
        }
        #expect((try? FileManager.default.contentsOfDirectory(atPath: freshCache.path))?.isEmpty ?? true)
        // The blocking form (CKAsset.fileURL) refuses it too, and succeeds once the bytes are right.
        #expect(throws: NimbusError.self) { _ = try viaProxy.downloadAssetBlocking(proxiedAsset) }
        proxy.setMode(.pass)
        let blocking = try viaProxy.downloadAssetBlocking(proxiedAsset)
        #expect(try Data(contentsOf: blocking) == bytes)
    }
}
