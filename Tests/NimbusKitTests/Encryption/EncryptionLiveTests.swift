import Foundation
import Testing
@testable import NimbusKit

/// End-to-end encryption against the real server (API.md § Encrypted fields: the server stores and
/// returns `ENCRYPTED_BYTES` as sent). Needs a server that accepts that type.
@Suite("End-to-end encryption against the real server")
struct EncryptionLiveTests {
    static let secret = "one-time code 493817 for bank"

    func clip(_ name: String, _ text: String = EncryptionLiveTests.secret) -> Record {
        var record = Record(recordType: "HistoryItemContent", id: RecordID(recordName: name))
        record["kind"] = .string("text")
        record.encryptedValues["value"] = .string(text)
        return record
    }

    /// What the server holds for a record, read with the raw API.
    func rawFields(_ database: Database, _ name: String) async throws -> JSONObject {
        let answer = try await database.transport.post(database.url("records/lookup"),
                                                       body: ["zoneID": ["zoneName": "_defaultZone"], "records": [["recordName": .string(name)]]])
        let record = try #require(JSON.array(answer["records"])?.first)
        return try #require(record["fields"]?.objectValue)
    }

    @Test func thePairedPhoneReadsWhatTheMacSealedAndTheServerHoldsOnlyCiphertext() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let mac = server.container(token: try server.device(user: "ada", device: "mac"))
        mac.keyStore = MemoryKeyStore()
        _ = try mac.keyStore?.loadOrCreate()
        let directory = temporaryDirectory("e2e-live")
        defer { try? FileManager.default.removeItem(at: directory) }
        // A 300 KiB photo: five segments.
        let photo = directory.appendingPathComponent("photo.jpg")
        let photoBytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try photoBytes.write(to: photo)
        var record = clip("clip-1")
        record.encryptedValues["photo"] = .asset(Asset(fileURL: photo))
        let saved = try await mac.privateDatabase.save(record)
        #expect(saved.encryptedValues["value"] == .string(Self.secret))

        let raw = try await rawFields(mac.privateDatabase, "clip-1")
        let value = try #require(raw["value"]?.objectValue)
        #expect(value["type"] == "ENCRYPTED_BYTES")
        #expect(String(decoding: JSON.encode(raw), as: UTF8.self).contains("493817") == false)
        let log = try String(contentsOf: server.logFile, encoding: .utf8)
        #expect(!log.contains("493817"))

        // The phone paired with the keys in the fragment reads the field and the photo.
        let invitation = try await mac.pairNewDevice(deviceName: "iphone", handingOverKeys: true)
        #expect(invitation.pairingURL.fragment?.hasPrefix("k=1.") == true)
        let phone = try await Container.enroll(pairingURL: invitation.pairingURL, deviceName: "iphone", identifier: TestServer.container,
                                               credentials: FileCredentialStore(directory: directory.appendingPathComponent("phone")),
                                               keyStore: MemoryKeyStore())
        let fetched = try await phone.privateDatabase.record(for: record.id)
        #expect(fetched.encryptedValues["value"] == .string(Self.secret))
        let sealedPhoto = try await phone.privateDatabase.downloadAsset(try #require(fetched["photo"]?.assetValue))
        #expect(try Data(contentsOf: sealedPhoto) != photoBytes)
        let opened = try await phone.privateDatabase.downloadDecryptedAsset(of: fetched, field: "photo")
        #expect(try Data(contentsOf: opened) == photoBytes)

        // A device paired without the key: encryptionKeyMissing, and a fetch leaves the record out.
        let bare = try await mac.pairNewDevice(deviceName: "ipad")
        let ipad = try await Container.enroll(pairingURL: bare.pairingURL, deviceName: "ipad", identifier: TestServer.container,
                                              credentials: FileCredentialStore(directory: directory.appendingPathComponent("ipad")),
                                              keyStore: MemoryKeyStore())
        await #expect { try await ipad.privateDatabase.record(for: record.id) } throws: { ($0 as? NimbusError)?.code == .encryptionKeyMissing }
        let page = try await ipad.privateDatabase.changes(in: .default, since: nil)
        #expect(page.modified.isEmpty && page.unreadable.map(\.recordID) == [record.id])
        // The recovery phrase restores it; a typo is caught first.
        let phrase = try mac.exportRecoveryPhrase()
        var typo = Array(phrase)
        typo[3] = typo[3] == "A" ? "B" : "A"
        #expect { try ipad.importRecoveryPhrase(String(typo)) } throws: { ($0 as? NimbusError)?.code == .invalidArguments }
        try ipad.importRecoveryPhrase(phrase)
        #expect(try await ipad.privateDatabase.record(for: record.id).encryptedValues["value"] == .string(Self.secret))
    }

    @Test func ciphertextMovedWithTheRawAPIOrFlippedIsDecryptionFailed() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let mac = server.container(token: try server.device(user: "ada", device: "mac"))
        mac.keyStore = MemoryKeyStore(KeyRing([AccountKey.generate()]))
        let database = mac.privateDatabase
        _ = try await database.save(clip("a", "secret of a"))
        _ = try await database.save(clip("b", "secret of b"))
        let sealedA = try #require((try await rawFields(database, "a"))["value"])
        let base64 = try #require(sealedA["value"]?.stringValue)
        var flipped = try #require(Data(base64Encoded: base64))
        flipped[flipped.count - 3] ^= 1
        let writes: [(String, JSONObject)] = [
            ("b", ["value": sealedA]),                                                                   // another record
            ("c", ["value": ["type": sealedA["type"] ?? "ENCRYPTED_BYTES", "value": .string(flipped.base64EncodedString())]]),  // a flipped byte
            ("d", ["other": sealedA]),                                                                   // another field
        ]
        for (name, fields) in writes {
            let answer = try await database.transport.post(database.url("records/modify"), body: [
                "zoneID": ["zoneName": "_defaultZone"],
                "operations": [["operationType": "forceReplace",
                                "record": ["recordName": .string(name), "recordType": "HistoryItemContent", "fields": .object(fields)]]],
            ])
            let item = try #require(JSON.array(answer["records"])?.first?.objectValue)
            #expect(item["serverErrorCode"] == nil, "the raw write of \(name): \(item)")
            await #expect { try await database.record(for: RecordID(recordName: name)) } throws: {
                ($0 as? NimbusError)?.code == .decryptionFailed
            }
        }
        #expect(try await database.record(for: RecordID(recordName: "a")).encryptedValues["value"] == .string("secret of a"))
    }

    @Test func afterRotationReencryptionConvergesAcrossThreeDevices() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let ring = KeyRing([AccountKey.generate()])
        let devices = try ["mac", "iphone", "ipad"].map { name -> Container in
            let container = server.container(token: try server.device(user: "ada", device: name))
            container.keyStore = MemoryKeyStore(ring)
            return container
        }
        for result in try await devices[0].privateDatabase.modify((0..<30).map { .save(clip("r\($0)", "text \($0)")) }) { _ = try result.get() }
        // The mac rotates and hands the new ring to the others (as a pairing or phrase would).
        try devices[0].rotateKey()
        let rotated = try devices[0].keyRing()
        for device in devices.dropFirst() {
            try device.keyStore?.save(rotated)
            device.reloadKeys()
        }
        // All three re-encrypt at once; passes repeat until no conflicts.
        var passes = 0
        var done = false
        while !done && passes < 10 {
            passes += 1
            let reports = try await withThrowingTaskGroup(of: ReencryptionReport.self) { group in
                for device in devices { group.addTask { try await device.privateDatabase.reencrypt(zone: .default) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            done = reports.allSatisfy { $0.conflicts == 0 && $0.unreadable.isEmpty }
        }
        #expect(done)
        // Every record is under key 2 and reads the same on every device.
        for index in 0..<30 {
            let raw = try await rawFields(devices[1].privateDatabase, "r\(index)")
            let text = try #require(raw["value"]?["value"]?.stringValue)
            let sealed = try #require(Data(base64Encoded: text))
            #expect(SealFormat.keyID(of: sealed) == 2)
            for device in devices {
                #expect(try await device.privateDatabase.record(for: RecordID(recordName: "r\(index)")).encryptedValues["value"] == .string("text \(index)"))
            }
        }
        // A device left with key 1 only: encryptionKeyMissing, not garbage.
        let behind = server.container(token: try server.device(user: "ada", device: "old-mac"))
        behind.keyStore = MemoryKeyStore(ring)
        await #expect { try await behind.privateDatabase.record(for: RecordID(recordName: "r0")) } throws: {
            ($0 as? NimbusError)?.code == .encryptionKeyMissing
        }
    }
}
