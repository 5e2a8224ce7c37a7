import Foundation
import Testing
@testable import NimbusKit
@testable import NimbusKitCK

/// Encrypted assets read through NimbusKitCK: a reader declares the sealed asset fields
/// (`NimbusCK.configure(encryptedAssetFields:)` or `NIMBUS_ENCRYPTED_ASSET_FIELDS`), as on the wire
/// they are plain ASSETIDs.
extension CKEncryptedValuesLiveTests {
    static let photoType = "CKSealedPhoto"

    @Test func declaredEncryptedAssetsReadBackAsPlaintextFiles() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "ada", device: "mac")
        let directory = temporaryDirectory("ck-assets")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("account.key")
        try FileKeyStore(fileURL: keyFile).save(KeyRing([AccountKey.generate()]))
        defer {
            NimbusCK.configure(keyStore: nil)
            NimbusCK.configure(encryptedAssetFields: nil)
        }
        func file(_ name: String, _ size: Int, _ factor: UInt8) throws -> (url: URL, bytes: Data) {
            let url = directory.appendingPathComponent(name)
            let bytes = Data((0..<size).map { UInt8(truncatingIfNeeded: $0) &* factor &+ 7 })
            try bytes.write(to: url)
            return (url, bytes)
        }
        let photo = try file("photo", 70_001, 13)
        let album = try [file("album-0", 3_000, 5), file("album-1", 140_003, 29)]

        // The writer: CloudKit code with encryptedValues only, nothing declared.
        NimbusCK.configure(server.configuration(token: token, cache: directory.appendingPathComponent("cache-writer")))
        NimbusCK.configure(keyStore: FileKeyStore(fileURL: keyFile))
        let writer = CKContainer(identifier: TestServer.container).privateCloudDatabase
        let zone = CKRecordZone.ID(zoneName: "Photos")
        _ = try await writer.save(CKRecordZone(zoneID: zone))
        let record = CKRecord(recordType: Self.photoType, recordID: CKRecord.ID(recordName: "p1", zoneID: zone))
        record["caption"] = "beach"
        record.encryptedValues["photo"] = CKAsset(fileURL: photo.url)
        record.encryptedValues["album"] = album.map { CKAsset(fileURL: $0.url) }
        _ = try await writer.save(record)

        // Another reader without the declaration: the asset is a plain one of sealed bytes (documented).
        NimbusCK.configure(server.configuration(token: token, cache: directory.appendingPathComponent("cache-plain")))
        let undeclared = try await CKContainer(identifier: TestServer.container).privateCloudDatabase.record(for: record.recordID)
        #expect(undeclared.encryptedValues["photo"] == nil)
        let sealed = try #require((undeclared["photo"] as? CKAsset)?.fileURL)
        let sealedBytes = try Data(contentsOf: sealed)
        #expect(sealedBytes != photo.bytes && sealedBytes.count == Int(AssetSeal.sealedSize(ofPlaintext: Int64(photo.bytes.count))))

        // A server-side swap: the same type's photo as a plaintext file (NimbusKit, no key, nothing declared).
        let raw = server.container(token: token, cache: directory.appendingPathComponent("cache-raw"))
        var swapped = Record(recordType: Self.photoType, id: RecordID(recordName: "p2", zoneID: ZoneID("Photos")))
        swapped["photo"] = .asset(Asset(fileURL: photo.url))
        _ = try await raw.privateDatabase.save(swapped)

        // The reader that declares the fields: plaintext files through every fetch, the swap an error.
        NimbusCK.configure(server.configuration(token: token, cache: directory.appendingPathComponent("cache-reader")),
                           encryptedAssetFields: [Self.photoType: ["photo", "album"]])
        let reader = CKContainer(identifier: TestServer.container).privateCloudDatabase
        func expectOpened(_ fetched: CKRecord, _ how: String) throws {
            let opened = try #require(fetched.encryptedValues["photo"] as? CKAsset, "\(how): no encryptedValues[\"photo\"]")
            #expect(try Data(contentsOf: try #require(opened.fileURL)) == photo.bytes, "\(how): photo")
            let list = try #require(fetched.encryptedValues["album"] as? [CKAsset], "\(how): no [CKAsset]")
            #expect(list.count == album.count, "\(how)")
            for (asset, original) in zip(list, album) {
                #expect(try Data(contentsOf: try #require(asset.fileURL)) == original.bytes, "\(how): album")
            }
            #expect(fetched["caption"] as? String == "beach")
        }
        try expectOpened(try await reader.record(for: record.recordID), "record(for:)")
        let looked = try await reader.records(for: [record.recordID, swapped.id.ck])
        try expectOpened(try #require(try looked[record.recordID]?.get()), "records(for:)")
        try Self.expectDecryptionFailed(looked[swapped.id.ck], "records(for:)")
        do {
            _ = try await reader.record(for: swapped.id.ck)
            Issue.record("record(for:) handed over the swapped record")
        } catch {
            try Self.expectDecryptionFailed(.failure(error), "record(for:)")
        }

        let query = try await reader.records(matching: CKQuery(recordType: Self.photoType, predicate: NSPredicate(value: true)), inZoneWith: zone)
        let matched = Dictionary(query.matchResults, uniquingKeysWith: { first, _ in first })
        try expectOpened(try #require(try matched[record.recordID]?.get()), "query")
        try Self.expectDecryptionFailed(matched[swapped.id.ck], "query")

        let changes = try await reader.recordZoneChanges(inZoneWith: zone, since: nil)
        try expectOpened(try #require(try changes.modificationResultsByID[record.recordID]?.get().record), "zone changes")
        try Self.expectDecryptionFailed(changes.modificationResultsByID[swapped.id.ck]?.map(\.record), "zone changes")

        let delegate = FetchedRecords()
        var configuration = CKSyncEngine.Configuration(
            database: reader, stateSerialization: CKSyncEngine.State.Serialization(journalPath: directory.appendingPathComponent("engine").path),
            delegate: delegate)
        configuration.automaticallySync = false
        try await CKSyncEngine(configuration).fetchChanges()
        let byEngine = await delegate.records
        try expectOpened(try #require(byEngine[record.recordID], "CKSyncEngine fetched no record"), "CKSyncEngine")
        #expect(byEngine[swapped.id.ck] == nil, "CKSyncEngine handed over the swapped record")
    }

    /// The CK error NimbusKitCK gives a record that does not open (`decryptionFailed` underneath).
    static func expectDecryptionFailed(_ result: Result<CKRecord, any Error>?, _ how: String) throws {
        let outcome = try #require(result, "\(how): no result for the swapped record")
        guard case .failure(let error) = outcome else {
            Issue.record("\(how): the swapped record was handed over as data")
            return
        }
        let ck = try #require(error as? CKError, "\(how): \(error)")
        #expect(ck.code == .internalError && ck.underlying.code == .decryptionFailed, "\(how): \(ck)")
    }

    @Test func environmentDeclarationIsParsedStrictly() throws {
        let fields = try NimbusCK.encryptedAssetFields(parsing: "Photo.image, Album.photos ,Photo.thumb_2")
        #expect(fields == ["Photo": ["image", "thumb_2"], "Album": ["photos"]])
        #expect(try NimbusCK.encryptedAssetFields(parsing: "  ").isEmpty)
        for (value, entry) in [("Photo.image,Album", "entry 2 \"Album\""), ("Photo.image,,Album.photos", "entry 2 \"\""),
                               ("Photo.image.x", "entry 1 \"Photo.image.x\""), ("Photo.image,", "entry 2 \"\""),
                               ("1Photo.image", "entry 1 \"1Photo.image\""), ("Photo.im-age", "entry 1 \"Photo.im-age\""),
                               ("Photo:image", "entry 1 \"Photo:image\"")] {
            do {
                _ = try NimbusCK.encryptedAssetFields(parsing: value)
                Issue.record("\(value) was accepted")
            } catch let error as CKError {
                #expect(error.code == .invalidArguments, "\(value)")
                #expect(error.underlying.reason.contains("NIMBUS_ENCRYPTED_ASSET_FIELDS \(entry) is not Type.field"), "\(error)")
            }
        }
    }
}

/// The records a CKSyncEngine fetched.
private actor FetchedRecords: CKSyncEngineDelegate {
    var records: [CKRecord.ID: CKRecord] = [:]

    func handleEvent(_ event: CKSyncEngine.Event, syncEngine: CKSyncEngine) async {
        guard case .fetchedRecordZoneChanges(let changes) = event else { return }
        for modification in changes.modifications { records[modification.record.recordID] = modification.record }
    }

    func nextRecordZoneChangeBatch(_ context: CKSyncEngine.SendChangesContext, syncEngine: CKSyncEngine) async
        -> CKSyncEngine.RecordZoneChangeBatch? { nil }
}

private extension RecordID {
    var ck: CKRecord.ID { CKRecord.ID(recordName: recordName, zoneID: CKRecordZone.ID(zoneName: zoneID.zoneName)) }
}
