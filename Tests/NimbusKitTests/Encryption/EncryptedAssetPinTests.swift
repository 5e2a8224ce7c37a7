import Foundation
import Testing
@testable import NimbusKit

/// The engine keeps the files of every unsent asset of a pending change, not only a field's plain
/// asset: an asset set through `encryptedValues` (sealed only at upload) and each asset of a list
/// still go up with the bytes they had when the app deleted its files after the enqueue.
@Suite("Pinned files of encrypted and listed assets")
struct EncryptedAssetPinTests {
    static func bytes(_ size: Int, _ seed: UInt8) -> Data { Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ Int(seed)) }) }

    @Test func encryptedAndListedAssetFilesDeletedAfterTheEnqueueAreStillSent() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let device = try Device.make(server, token: try server.device(user: "pins-e2e", device: "mac"))
        device.database.container.keyStore = MemoryKeyStore(KeyRing([AccountKey.generate()]))
        let folder = temporaryDirectory("pin-sources")
        let (secret, first, second) = (Self.bytes(150_001, 1), Self.bytes(70_000, 2), Self.bytes(3_000, 3))
        let files = ["secret.jpg", "first.bin", "second.bin"].map { folder.appendingPathComponent($0) }
        for (file, data) in zip(files, [secret, first, second]) { try data.write(to: file) }

        var record = event("sealed photo", name: "pinned-e2e")
        record.encryptedValues["photo"] = .asset(Asset(fileURL: files[0]))
        record.fields["album"] = .list([.asset(Asset(fileURL: files[1])),
                                        .asset(Asset(fileURL: files[2]))], elementType: .asset)
        try await device.engine.enqueue(.save(record))
        for file in files { try FileManager.default.removeItem(at: file) }
        let pins = device.stateURL.appendingPathExtension("assets")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: pins.path)) ?? []).count == 3, "not every file was linked")

        #expect(try await device.flush())
        let failed = await device.engine.status.failed
        #expect(failed.isEmpty, "\(failed)")
        guard let stored = try await serverContents(device.database)[record.id] else { throw TestFailure("the record did not reach the server") }
        let opened = try await device.database.downloadDecryptedAsset(of: stored, field: "photo")
        #expect(try Data(contentsOf: opened) == secret)
        guard case .list(let album, _)? = stored.fields["album"], album.count == 2,
              case .asset(let a)? = album.first, case .asset(let b)? = album.last else {
            throw TestFailure("the server's album is \(String(describing: stored.fields["album"]))")
        }
        #expect(try Data(contentsOf: try await device.database.downloadAsset(a)) == first)
        #expect(try Data(contentsOf: try await device.database.downloadAsset(b)) == second)
        #expect(try FileManager.default.contentsOfDirectory(atPath: pins.path).isEmpty, "a link outlived the acknowledgement")
    }
}
