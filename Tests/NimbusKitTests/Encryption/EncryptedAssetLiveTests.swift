import Foundation
import Testing
@testable import NimbusKit

/// Encrypted assets on every read path, against the real server (CLIENT.md § End-to-end
/// encryption): a field the app declares (`encryptedAssetFields`) is sealed before upload, and
/// the engine's prefetch, `downloadAsset` and `downloadDecryptedAsset` open it; a plaintext file
/// a server puts in its place is `decryptionFailed`, never data; no sealed file is left behind.
@Suite("Encrypted assets against the real server")
struct EncryptedAssetLiveTests {
    static let declared = ["Photo": Set(["image"])]
    static let photoBytes = photo(200_003)
    /// 21 header bytes, 4 segments (3 full and a last one), 16 tag bytes each.
    static let sealedSize = 21 + 200_003 + 4 * 16
    /// The first test's photo: a size of its own, so that a leftover sealed file is recognised
    /// among the files the tests running beside it seal.
    static let ownBytes = photo(200_011)
    static let ownSealedSize = 21 + 200_011 + 4 * 16

    static func photo(_ size: Int) -> Data { Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }) }

    struct Scene {
        let server: TestServer
        let directory: URL
        let ring: KeyRing
        let photo: URL

        /// A device of user ada with the account key and the declared asset field (or without).
        func device(_ name: String, key: Bool = true, declaring: Bool = true) throws -> Device {
            let device = try Device.make(server, token: try server.device(user: "ada", device: name))
            if key { device.database.container.keyStore = MemoryKeyStore(ring) }
            if declaring { device.database.container.encryptedAssetFields = EncryptedAssetLiveTests.declared }
            return device
        }

        func photoRecord(_ name: String) -> Record {
            var record = Record(recordType: "Photo", id: RecordID(recordName: name))
            record["label"] = .string("intruder at the door")
            record["image"] = .asset(Asset(fileURL: photo))
            return record
        }

        func stop() {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func scene(_ bytes: Data = photoBytes) throws -> Scene {
        let server = try TestServer.start()
        let directory = temporaryDirectory("e2e-assets")
        let photo = directory.appendingPathComponent("photo.jpg")
        try bytes.write(to: photo)
        return Scene(server: server, directory: directory, ring: KeyRing([AccountKey.generate()]), photo: photo)
    }

    /// Files of `directory` (recursively) of exactly `size` bytes.
    static func files(in directory: URL, ofSize size: Int) -> [URL] {
        let items = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.fileSizeKey])?.allObjects as? [URL] ?? []
        return items.filter { (try? $0.resourceValues(forKeys: [.fileSizeKey]).fileSize) == size }
    }

    /// The sealed temporary upload files of `size` bytes.
    static func sealedTemporaries(ofSize size: Int) -> Set<URL> {
        let files = (try? FileManager.default.contentsOfDirectory(at: FileManager.default.temporaryDirectory,
                                                                   includingPropertiesForKeys: [.fileSizeKey])) ?? []
        return Set(files.filter { $0.lastPathComponent.hasPrefix("nimbus-sealed-")
            && (try? $0.resourceValues(forKeys: [.fileSizeKey]).fileSize) == size })
    }

    static func cache(of device: Device) -> URL { device.database.container.assetCache.directory }

    /// A download's partial files left in a device's cache.
    static func partialFiles(of device: Device) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: cache(of: device).path)) ?? []).filter { $0.hasPrefix(".partial-") }
    }

    @Test func theEnginesPrefetchPutsTheOpenedPlaintextInTheCacheAndKeepsNoSealedFile() async throws {
        let (photoBytes, sealedSize) = (Self.ownBytes, Self.ownSealedSize)
        let scene = try Self.scene(photoBytes)
        defer { scene.stop() }
        let mac = try scene.device("mac")
        let before = Self.sealedTemporaries(ofSize: sealedSize)
        try await mac.save(scene.photoRecord("p1"))
        #expect(try await mac.flush())
        // The sealed temporary upload file is gone.
        #expect(Self.sealedTemporaries(ofSize: sealedSize).subtracting(before).isEmpty)

        let phone = try scene.device("phone")
        try await phone.engine.fetchChanges()
        let fetched = try #require(phone.replica.snapshot[RecordID(recordName: "p1")])
        let asset = try #require(fetched["image"]?.assetValue)
        #expect(asset.isEncrypted && fetched.encryptedValues["image"]?.assetValue?.isEncrypted == true)
        let file = try #require(asset.fileURL, "the prefetch left no file")
        #expect(try Data(contentsOf: file) == photoBytes)
        // Only the plaintext is in the cache: the sealed bytes were opened as they arrived, never written.
        #expect(Self.files(in: Self.cache(of: phone), ofSize: sealedSize).isEmpty)
        #expect(Self.partialFiles(of: phone).isEmpty)
        // What the server holds is sealed: the same bytes fetched without the mark.
        var unmarked = asset
        unmarked.sealContext = nil
        unmarked.fileURL = nil
        let onServer = try Data(contentsOf: try await phone.database.downloadAsset(unmarked))
        #expect(onServer.count == sealedSize && onServer.first == 1 && onServer != photoBytes)
        // The lazy read paths open it too.
        #expect(try Data(contentsOf: try await phone.database.downloadAsset(asset)) == photoBytes)
        #expect(try Data(contentsOf: try phone.database.downloadAssetBlocking(asset)) == photoBytes)
        #expect(try Data(contentsOf: try await phone.database.downloadDecryptedAsset(of: fetched, field: "image")) == photoBytes)
    }

    @Test func aPlaintextFileInPlaceOfTheSealedOneIsDecryptionFailedOnEveryReadPath() async throws {
        let scene = try Self.scene()
        defer { scene.stop() }
        let mac = try scene.device("mac")
        try await mac.save(scene.photoRecord("p1"))
        #expect(try await mac.flush())
        // The server (here a device that neither declares the field nor has the key, with the
        // user's token) puts the plaintext photo in place of the sealed file.
        let server = try scene.device("server", key: false, declaring: false)
        var swapped = try await server.database.record(for: RecordID(recordName: "p1"))
        swapped["image"] = .asset(Asset(fileURL: scene.photo))
        _ = try await server.database.save(swapped)

        let phone = try scene.device("phone")
        try await phone.engine.fetchChanges()
        // The engine parks the record as unreadable, naming the field, as one whose field does not open.
        #expect(phone.replica.snapshot[RecordID(recordName: "p1")] == nil, "the engine applied a record whose asset does not open")
        let parked = try #require(phone.replica.unreadable.first { $0.recordID == RecordID(recordName: "p1") })
        #expect(parked.error.code == .decryptionFailed && parked.error.fieldName == "image", "\(parked.error)")
        let fetched = try await phone.database.record(for: RecordID(recordName: "p1"))
        let asset = try #require(fetched["image"]?.assetValue)
        #expect(asset.fileURL == nil)
        let failed: (any Error) -> Bool = { ($0 as? NimbusError)?.code == .decryptionFailed }
        await #expect { try await phone.database.downloadAsset(asset) } throws: { failed($0) }
        #expect { try phone.database.downloadAssetBlocking(asset) } throws: { failed($0) }
        await #expect { try await phone.database.downloadDecryptedAsset(of: fetched, field: "image") } throws: { failed($0) }
        // No file in the cache holds the photo, sealed or not.
        #expect(Self.files(in: Self.cache(of: phone), ofSize: Self.photoBytes.count).isEmpty)
        #expect(Self.files(in: Self.cache(of: phone), ofSize: Self.sealedSize).isEmpty)
        #expect(Self.partialFiles(of: phone).isEmpty)
    }

    @Test func aSealedFileCutAtASegmentBoundaryIsDecryptionFailedAndLeavesNoPlaintext() async throws {
        let scene = try Self.scene()
        defer { scene.stop() }
        let mac = try scene.device("mac")
        try await mac.save(scene.photoRecord("p1"))
        #expect(try await mac.flush())
        // The server keeps the sealed file's first two segments (its checksum made over them).
        let server = try scene.device("server", key: false, declaring: false)
        var cut = try await server.database.record(for: RecordID(recordName: "p1"))
        var unmarked = try #require(cut["image"]?.assetValue)
        unmarked.sealContext = nil
        let sealed = try Data(contentsOf: try await server.database.downloadAsset(unmarked))
        let cutFile = scene.directory.appendingPathComponent("cut")
        try sealed.prefix(AssetSeal.headerSize + 2 * AssetSeal.sealedSegmentSize).write(to: cutFile)
        cut["image"] = .asset(Asset(fileURL: cutFile))
        _ = try await server.database.save(cut)

        let phone = try scene.device("phone")
        let fetched = try await phone.database.record(for: RecordID(recordName: "p1"))
        let asset = try #require(fetched["image"]?.assetValue)
        #expect(asset.isEncrypted && asset.size == Int64(AssetSeal.headerSize + 2 * AssetSeal.sealedSegmentSize))
        let failed: (any Error) -> Bool = { ($0 as? NimbusError)?.code == .decryptionFailed }
        await #expect { try await phone.database.downloadAsset(asset) } throws: { failed($0) }
        #expect { try phone.database.downloadAssetBlocking(asset) } throws: { failed($0) }
        // Two segments opened before the end showed the cut: their plaintext was not kept.
        #expect(Self.files(in: Self.cache(of: phone), ofSize: 2 * 65_536).isEmpty)
        #expect(Self.partialFiles(of: phone).isEmpty)
    }

    /// A device that declares the field but was paired without the key gets the record parked as
    /// `encryptionKeyMissing`, not a record whose photo silently has no file.
    @Test func theEngineParksARecordWhoseAssetItHasNoKeyFor() async throws {
        let scene = try Self.scene()
        defer { scene.stop() }
        let mac = try scene.device("mac")
        try await mac.save(scene.photoRecord("p2"))
        #expect(try await mac.flush())
        let phone = try scene.device("phone", key: false)
        try await phone.engine.fetchChanges()
        #expect(phone.replica.snapshot.isEmpty)
        #expect(phone.replica.unreadable.map(\.recordID) == [RecordID(recordName: "p2")])
        #expect(phone.replica.unreadable.first?.error.code == .encryptionKeyMissing)
    }

    @Test func aResentCreateCarriesTheSameBytesAndTheServerTakesItAsTheSameCreate() async throws {
        let scene = try Self.scene()
        defer { scene.stop() }
        let mac = try scene.device("mac")
        var record = scene.photoRecord("p1")
        record.encryptedValues["caption"] = .string("the code is 493817")
        try await mac.save(record)
        // The outbox holds the ciphertext it will send.
        guard case .save(let pending)? = await mac.engine.pendingChanges.first,
              case .encrypted(let caption)? = pending["caption"] else { throw TestFailure("no sealed pending change") }
        #expect(caption.ciphertext != nil)
        // The first send's answer is lost (here: the change is sent around the engine); every
        // resend carries the same bytes, so the server answers the stored record: the same create.
        let first = try await mac.database.save(pending)
        let again = try await mac.database.save(pending)
        #expect(again.changeTag == first.changeTag)
        #expect(again["image"]?.assetValue?.fileChecksum == first["image"]?.assetValue?.fileChecksum)
        let report = await mac.engine.sendChanges()
        #expect(report.left == 0 && report.parked.isEmpty && report.sent == 1, "\(report)")
        #expect(mac.replica.conflicts.isEmpty, "the engine's own resend was a conflict")
        // What the server holds opens on another device.
        let phone = try scene.device("phone")
        let fetched = try await phone.database.record(for: record.id)
        #expect(fetched.encryptedValues["caption"] == .string("the code is 493817"))
        #expect(try Data(contentsOf: try await phone.database.downloadAsset(try #require(fetched["image"]?.assetValue))) == Self.photoBytes)
    }

    @Test func theNotificationChannelOpensEncryptedFieldsAndSaysWhenItCannot() async throws {
        let scene = try Self.scene()
        defer { scene.stop() }
        let mac = try scene.device("mac")
        let phone = try scene.device("phone")
        let ipad = try scene.device("ipad", key: false)
        let info = Subscription.NotificationInfo(title: "Failed unlock", desiredKeys: ["appName", "label"])
        _ = try await phone.database.save(Subscription.query("unlocks", recordType: "FailedAuthEvent", firesOn: [.create],
                                                             notificationInfo: info))
        let phoneChannel = try await phone.database.notificationChannel()
        let ipadChannel = try await ipad.database.notificationChannel()
        var event = Record(recordType: "FailedAuthEvent", id: RecordID(recordName: "e1"))
        event.encryptedValues["appName"] = .string("Safari")
        event["label"] = .string("mac-mini")
        _ = try await mac.database.save(event)

        var phoneIterator = phoneChannel.makeAsyncIterator()
        let opened = try #require(try await phoneIterator.next())
        #expect(opened.unreadable == nil)
        #expect(opened.fields["appName"]?.decrypted == .string("Safari") && opened.fields["label"] == .string("mac-mini"))
        var ipadIterator = ipadChannel.makeAsyncIterator()
        let sealed = try #require(try await ipadIterator.next())
        #expect(sealed.unreadable?.code == .encryptionKeyMissing)
        guard case .encrypted(let value)? = sealed.fields["appName"] else { throw TestFailure("appName is not encrypted") }
        #expect(value.plaintext == nil && value.ciphertext != nil)
    }
}
