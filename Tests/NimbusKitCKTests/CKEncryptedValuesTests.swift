import Foundation
import Testing
@testable import NimbusKit
@testable import NimbusKitCK

/// CloudKit code using `record.encryptedValues["x"]`: what goes to the server is ciphertext
/// (`ENCRYPTED_BYTES`), what the app reads back is the plaintext, in CloudKit's value types.
@Suite("NimbusKitCK encryptedValues")
struct CKEncryptedValuesTests {
    @Test func encryptedValuesAreSealedOnTheWayOutAndReadAsPlaintext() throws {
        let container = Container(identifier: "iCloud.com.mirxa.AppLocker",
                                  configuration: NimbusConfiguration(serverURL: URL(string: "http://127.0.0.1:9")!, token: "t"))
        container.keyStore = MemoryKeyStore(KeyRing([AccountKey.generate()]))
        let record = CKRecord(recordType: "FailedAuthEvent", recordID: CKRecord.ID(recordName: "event-1"))
        record["appName"] = "Safari"
        record.encryptedValues["deviceName"] = "mac-mini"
        record.encryptedValues["attempts"] = 3
        record.encryptedValues["photoKey"] = Data([1, 2, 3])
        #expect(record.encryptedValues["deviceName"] as? String == "mac-mini")
        #expect(record.encryptedValues.allKeys() == ["attempts", "deviceName", "photoKey"])
        #expect(record.encryptedValues["appName"] == nil)  // a plain field is not an encrypted value

        let wire = try container.seal(record.record).wireRecord()
        let text = String(decoding: JSON.encode(wire), as: UTF8.self)
        #expect(!text.contains("mac-mini") && text.contains("Safari"))
        let fields = try #require(wire["fields"])
        #expect(fields["deviceName"]?["type"] == "ENCRYPTED_BYTES")
        #expect(fields["attempts"]?["type"] == "ENCRYPTED_BYTES")

        let fetched = CKRecord(record: try container.open(try #require(try Record.fromWire(wire, zoneID: .default))))
        #expect(fetched.encryptedValues["deviceName"] as? String == "mac-mini")
        #expect((fetched.encryptedValues["attempts"] as? NSNumber)?.int64Value == 3)
        #expect(fetched.encryptedValues["photoKey"] as? Data == Data([1, 2, 3]))
        #expect(fetched["appName"] as? String == "Safari")
        #expect(fetched.changedKeys().isEmpty)
    }

    @Test func nimbusKeyFileIsReadOrCreatedWithAFreshKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ck-key-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("account.key").path
        let store = try #require(NimbusCK.keyStore(environment: ["NIMBUS_KEY_FILE": path]))
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .newlines)
        #expect(text.count == 43 && !text.contains("="))
        #expect(Base64URL.decode(text)?.count == 32)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int == 0o600)
        let ring = try store.load()
        #expect(ring.newest?.id == 1 && ring.newest?.base64URL == text)
        // Read again, not replaced.
        #expect(try NimbusCK.keyStore(environment: ["NIMBUS_KEY_FILE": path])?.load() == ring)
    }
}
