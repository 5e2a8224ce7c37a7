import Foundation
import Testing
@testable import NimbusKit

/// Encrypted lists of assets (`ASSETID_LIST`) against the real server: each element of a declared
/// encrypted asset field, or of a list set through `encryptedValues`, is sealed on its own (bound to
/// its record and field, docs/encryption.md) and opened on every read; an element the server swaps
/// for a plaintext file is `decryptionFailed` naming the field, parked by the engine, never data.
@Suite("Encrypted lists of assets against the real server")
struct EncryptedAssetListTests {
    static let declared = ["Album": Set(["photos"])]
    /// Three files of their own sizes (two segments, one, and one of three), so that a file on the
    /// server or in a cache is recognised by its size.
    static let sizes = [70_001, 1_234, 140_003]
    static func bytes(_ index: Int) -> Data {
        Data((0..<sizes[index]).map { UInt8(truncatingIfNeeded: $0 &* (7 + index) &+ 3) })
    }
    static func sealedSize(_ index: Int) -> Int { Int(AssetSeal.sealedSize(ofPlaintext: Int64(sizes[index]))) }

    struct Scene {
        let server: TestServer
        let directory: URL
        let ring: KeyRing
        let files: [URL]

        func device(_ name: String, key: Bool = true, declaring: Bool = true) throws -> Device {
            let device = try Device.make(server, token: try server.device(user: "ada", device: name))
            if key { device.database.container.keyStore = MemoryKeyStore(ring) }
            if declaring { device.database.container.encryptedAssetFields = EncryptedAssetListTests.declared }
            return device
        }

        var list: RecordValue { .list(files.map { .asset(Asset(fileURL: $0)) }, elementType: .asset) }

        func stop() {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func scene() throws -> Scene {
        let server = try TestServer.start()
        let directory = temporaryDirectory("e2e-asset-list")
        let files = try sizes.indices.map { index -> URL in
            let file = directory.appendingPathComponent("photo-\(index).jpg")
            try bytes(index).write(to: file)
            return file
        }
        return Scene(server: server, directory: directory, ring: KeyRing([AccountKey.generate()]), files: files)
    }

    static func assets(_ value: RecordValue?) -> [Asset] {
        guard case .list(let values, _)? = value else { return [] }
        return values.compactMap(\.assetValue)
    }

    /// The bytes the server holds for each element, downloaded by a device that neither declares
    /// the field nor has the key.
    static func onServer(_ scene: Scene, _ id: RecordID, reader: String = "server-reader") async throws -> [Data] {
        let server = try scene.device(reader, key: false, declaring: false)
        let record = try await server.database.record(for: id)
        var stored: [Data] = []
        for var asset in assets(record["photos"]) {
            asset.sealContext = nil
            asset.fileURL = nil
            stored.append(try Data(contentsOf: try await server.database.downloadAsset(asset)))
        }
        return stored
    }

    /// Every element stored sealed (its own size, version byte, not the file), and opened on the
    /// phone by the engine's prefetch and by `downloadDecryptedAsset(of:field:element:)`.
    func expectSealedAndOpened(_ scene: Scene, _ id: RecordID) async throws {
        let stored = try await Self.onServer(scene, id)
        #expect(stored.count == 3)
        for (index, data) in stored.enumerated() {
            #expect(data.count == Self.sealedSize(index) && data.first == 1 && data != Self.bytes(index), "element \(index) is not sealed")
        }
        let phone = try scene.device("phone")
        try await phone.engine.fetchChanges()
        #expect(phone.replica.unreadable.isEmpty, "\(phone.replica.unreadable)")
        let fetched = try #require(phone.replica.snapshot[id], "the phone did not apply the album")
        let assets = Self.assets(fetched["photos"])
        #expect(assets.count == 3)
        for (index, asset) in assets.enumerated() {
            #expect(asset.isEncrypted)
            let file = try #require(asset.fileURL, "element \(index) has no file")
            #expect(try Data(contentsOf: file) == Self.bytes(index), "element \(index) did not open to its file")
        }
        #expect(Self.assets(fetched.encryptedValues["photos"]).count == 3)
        let second = try await phone.database.downloadDecryptedAsset(of: fetched, field: "photos", element: 1)
        #expect(try Data(contentsOf: second) == Self.bytes(1))
    }

    @Test func aDeclaredListOfThreeFilesIsSealedFileByFileAndOpensOnAnotherDevice() async throws {
        let scene = try Self.scene()
        defer { scene.stop() }
        let mac = try scene.device("mac")
        var album = Record(recordType: "Album", id: RecordID(recordName: "a1"))
        album["photos"] = scene.list
        try await mac.save(album)
        #expect(try await mac.flush())
        try await expectSealedAndOpened(scene, album.id)
    }

    @Test func aListSetThroughEncryptedValuesIsSealedFileByFile() async throws {
        let scene = try Self.scene()
        defer { scene.stop() }
        let mac = try scene.device("mac", declaring: false)
        var album = Record(recordType: "Album", id: RecordID(recordName: "a2"))
        album.encryptedValues["photos"] = scene.list
        try await mac.save(album)
        #expect(try await mac.flush())
        let failed = await mac.engine.status.failed
        #expect(failed.isEmpty, "\(failed)")
        try await expectSealedAndOpened(scene, album.id)
    }

    @Test func anElementSwappedForAPlaintextFileIsDecryptionFailedAndParked() async throws {
        let scene = try Self.scene()
        defer { scene.stop() }
        let mac = try scene.device("mac")
        var album = Record(recordType: "Album", id: RecordID(recordName: "a3"))
        album["photos"] = scene.list
        try await mac.save(album)
        #expect(try await mac.flush())
        let phone = try scene.device("phone")
        try await phone.engine.fetchChanges()
        #expect(phone.replica.snapshot[album.id] != nil && phone.replica.unreadable.isEmpty, "the sealed list did not open")

        // The server keeps the sealed first and last elements and puts the plaintext of the
        // second file in the middle.
        let stored = try await Self.onServer(scene, album.id)
        let copies = try [0, 2].map { index -> URL in
            let file = scene.directory.appendingPathComponent("stored-\(index)")
            try stored[index].write(to: file)
            return file
        }
        let server = try scene.device("server", key: false, declaring: false)
        var swapped = try await server.database.record(for: album.id)
        swapped["photos"] = .list([.asset(Asset(fileURL: copies[0])), .asset(Asset(fileURL: scene.files[1])),
                                   .asset(Asset(fileURL: copies[1]))], elementType: .asset)
        _ = try await server.database.save(swapped)

        try await phone.engine.fetchChanges()
        let parked = try #require(phone.replica.unreadable.first { $0.recordID == album.id }, "the swapped list was applied")
        #expect(parked.error.code == .decryptionFailed && parked.error.fieldName == "photos", "\(parked.error)")
        // A direct fetch leaves the swapped element without a file; reading it throws; the others open.
        let fetched = try await phone.database.downloadingAssets(of: [try await phone.database.record(for: album.id)])[0]
        let assets = Self.assets(fetched["photos"])
        #expect(assets.count == 3 && assets[1].fileURL == nil)
        await #expect { try await phone.database.downloadAsset(assets[1]) } throws: {
            ($0 as? NimbusError)?.code == .decryptionFailed && ($0 as? NimbusError)?.fieldName == "photos"
        }
        #expect(try Data(contentsOf: try #require(assets[0].fileURL)) == Self.bytes(0))
        #expect(try Data(contentsOf: try #require(assets[2].fileURL)) == Self.bytes(2))
    }
}
