import Foundation
import Testing
@testable import NimbusKit
import NimbusKitCK

/// CloudKit code using `record.encryptedValues` against the real server: the server holds
/// `ENCRYPTED_BYTES`, the app reads its plaintext back. NimbusCK's configuration is process-wide:
/// this is the only test that sets it.
@Suite("NimbusKitCK encryptedValues against the real server")
struct CKEncryptedValuesLiveTests {
    @Test func cloudKitCodeSavesCiphertextAndReadsPlaintextBack() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "ada", device: "mac")
        let keyFile = temporaryDirectory("ck-live").appendingPathComponent("account.key")
        defer { try? FileManager.default.removeItem(at: keyFile.deletingLastPathComponent()) }
        NimbusCK.configure(server.configuration(token: token))
        NimbusCK.configure(keyStore: FileKeyStore(fileURL: keyFile))
        try FileKeyStore(fileURL: keyFile).save(KeyRing([AccountKey.generate()]))

        let database = CKContainer(identifier: TestServer.container).privateCloudDatabase
        let record = CKRecord(recordType: "FailedAuthEvent", recordID: CKRecord.ID(recordName: "event-1"))
        record["appName"] = "Safari"
        record.encryptedValues["deviceName"] = "mac-mini"
        // A list of assets set through encryptedValues: each file sealed on its own.
        let photos = try [5_001, 70_002].map { size -> (URL, Data) in
            let file = keyFile.deletingLastPathComponent().appendingPathComponent("photo-\(size)")
            let bytes = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 11) })
            try bytes.write(to: file)
            return (file, bytes)
        }
        record.encryptedValues["photos"] = photos.map { CKAsset(fileURL: $0.0) }
        _ = try await database.save(record)

        let plain = server.container(token: token)  // no key store: what the server holds, unopened
        let answer = try await plain.transport.post(plain.privateDatabase.url("records/lookup"),
                                                    body: ["zoneID": ["zoneName": "_defaultZone"], "records": [["recordName": "event-1"]]])
        let text = String(decoding: JSON.encode(answer), as: UTF8.self)
        #expect(text.contains("ENCRYPTED_BYTES"))
        #expect(!text.contains("mac-mini"))
        #expect(text.contains("Safari"))
        let stored = JSON.object(JSON.object(JSON.array(answer["records"])?.first)?["fields"])
        let field = try #require(JSON.object(stored?["photos"]), "\(text)")
        #expect(JSON.string(field["type"]) == "ASSETID_LIST")
        let elements = JSON.array(field["value"]) ?? []
        #expect(elements.count == 2)
        for (element, photo) in zip(elements, photos) {
            let object = try #require(JSON.object(element))
            let asset = Asset(fileChecksum: JSON.string(object["fileChecksum"]), size: JSON.int64(object["size"]),
                              downloadURL: JSON.string(object["downloadURL"]).flatMap { URL(string: $0) })
            let onServer = try Data(contentsOf: try await plain.privateDatabase.downloadAsset(asset))
            #expect(onServer.count == Int(AssetSeal.sealedSize(ofPlaintext: Int64(photo.1.count))) && onServer != photo.1)
        }

        let fetched = try await database.record(for: CKRecord.ID(recordName: "event-1"))
        #expect(fetched.encryptedValues["deviceName"] as? String == "mac-mini")
        #expect(fetched["appName"] as? String == "Safari")
        NimbusCK.configure(keyStore: nil)
    }
}
