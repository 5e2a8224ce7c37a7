import Foundation
import Testing
@testable import NimbusKit

/// Sealed fields and assets as a client reads them back: moved, flipped, cut or reordered
/// ciphertext is `decryptionFailed`, a missing key `encryptionKeyMissing`, never data.
@Suite("End-to-end encryption: tampering, rotation, keys")
struct EncryptionFormatTests {
    static let identifier = "iCloud.com.example.Maccy"

    func container(_ ring: KeyRing?) -> Container {
        let container = Container(identifier: Self.identifier, configuration: NimbusConfiguration(serverURL: URL(string: "http://127.0.0.1:9")!, token: "t"))
        if let ring { container.keyStore = MemoryKeyStore(ring) }
        return container
    }

    /// A record's wire form after sealing, as the server would store and return it.
    func roundTrip(_ record: Record, through container: Container, edit: (inout JSONObject) -> Void = { _ in }) throws -> Record {
        var wire = try container.seal(record).wireRecord()
        edit(&wire)
        let parsed = try JSON.decodeObject(JSON.encode(wire))
        let fetched = try #require(try Record.fromWire(parsed, zoneID: record.zoneID))
        return try container.open(fetched)
    }

    func clipboard(_ name: String = "item-1", zone: ZoneID = .default) -> Record {
        var record = Record(recordType: "HistoryItemContent", id: RecordID(recordName: name, zoneID: zone))
        record["type"] = .string("public.utf8-plain-text")
        record.encryptedValues["value"] = .string("correct horse battery staple")
        record.encryptedValues["stamp"] = .dates([Date(timeIntervalSince1970: 1_700_000_000)])
        return record
    }

    @Test func aSealedRecordTravelsAsEncryptedBytesAndOpensToItsPlaintext() throws {
        let device = container(KeyRing([AccountKey.generate()]))
        let record = clipboard()
        let sealedRecord = try device.seal(record)
        let wire = sealedRecord.wireRecord()
        let fields = try #require(wire["fields"]?.objectValue)
        let value = try #require(fields["value"]?.objectValue)
        #expect(value["type"] == "ENCRYPTED_BYTES")
        let text = try #require(value["value"]?.stringValue)
        let sealed = try #require(Data(base64Encoded: text))
        #expect(sealed.count == (try FieldPlaintext.encode(.string("correct horse battery staple"))).count + SealFormat.fieldOverhead)
        #expect(String(decoding: JSON.encode(wire), as: UTF8.self).contains("horse") == false)
        let back = try roundTrip(record, through: device)
        #expect(back.encryptedValues["value"] == .string("correct horse battery staple"))
        #expect(back.encryptedValues["stamp"] == .dates([Date(timeIntervalSince1970: 1_700_000_000)]))
        #expect(back["type"] == .string("public.utf8-plain-text"))
        #expect(back.changedKeys.isEmpty)
        // The fast writer (JSONBytes) sends the same ciphertext.
        var json = JSONBytes(capacity: 256)
        try sealedRecord.fields["value"]?.write(to: &json)
        #expect(String(decoding: json.bytes, as: UTF8.self).contains(sealed.base64EncodedString()))
        // Sealed once, kept: sealing again (a retried create) gives the same bytes.
        #expect(try device.seal(sealedRecord) == sealedRecord)
        #expect(try device.seal(sealedRecord).fields["value"].flatMap { if case .encrypted(let v) = $0 { v.ciphertext } else { nil } } == sealed)
    }

    @Test func ciphertextMovedToAnotherRecordFieldTypeOrZoneDoesNotOpen() throws {
        let device = container(KeyRing([AccountKey.generate()]))
        let record = clipboard()
        let moves: [(String, (inout JSONObject) -> Void)] = [
            ("another record", { $0["recordName"] = "item-2" }),
            ("another type", { $0["recordType"] = "HistoryItem" }),
            ("another zone", { $0["zoneID"] = ["zoneName": "Work"] }),
            ("another field", { wire in
                var fields = wire["fields"]?.objectValue ?? [:]
                fields["value"] = fields["stamp"]
                wire["fields"] = .object(fields)
            }),
        ]
        for (what, move) in moves {
            do {
                _ = try roundTrip(record, through: device, edit: move)
                Issue.record("a ciphertext moved to \(what) opened")
            } catch let error as NimbusError {
                #expect(error.code == .decryptionFailed, "\(what)")
                #expect(error.fieldName == "value" || error.fieldName == "stamp", "\(what)")
            }
        }
        // Another container: same key, same names, other container identifier.
        let other = Container(identifier: "iCloud.com.example.Other", configuration: device.configuration)
        other.keyStore = device.keyStore
        let fetched = try #require(try Record.fromWire(try device.seal(record).wireRecord(), zoneID: .default))
        #expect(throws: NimbusError.self) { try other.open(fetched) }
    }

    @Test func aFlippedByteAnyWhereInTheValueIsDecryptionFailed() throws {
        let device = container(KeyRing([AccountKey.generate()]))
        let sealed = try device.seal(clipboard())
        guard case .encrypted(let value)? = sealed.fields["value"], let bytes = value.ciphertext else { Issue.record("not sealed"); return }
        for index in 5..<bytes.count {  // bytes 0–4 are the version and key id: see the next checks
            var flipped = bytes
            flipped[index] ^= 0x40
            var record = sealed
            record.fields["value"] = .encrypted(EncryptedValue(sealed: flipped))
            #expect(throws: NimbusError.self) { try device.open(record) }
        }
        var record = sealed
        record.fields["value"] = .encrypted(EncryptedValue(sealed: Data([2]) + bytes.dropFirst()))
        #expect { try device.open(record) } throws: { ($0 as? NimbusError)?.code == .decryptionFailed }
        record.fields["value"] = .encrypted(EncryptedValue(sealed: bytes.prefix(20)))
        #expect { try device.open(record) } throws: { ($0 as? NimbusError)?.code == .decryptionFailed }
    }

    @Test func aDeviceWithoutTheKeyGetsEncryptionKeyMissingAndAnotherKeyDecryptionFailed() throws {
        let first = container(KeyRing([AccountKey.generate()]))
        let fetched = try #require(try Record.fromWire(try first.seal(clipboard()).wireRecord(), zoneID: .default))
        #expect { try self.container(nil).open(fetched) } throws: { ($0 as? NimbusError)?.code == .encryptionKeyMissing }
        #expect { try self.container(KeyRing()).open(fetched) } throws: { ($0 as? NimbusError)?.code == .encryptionKeyMissing }
        // Another user's key 1: the id matches, the bytes do not.
        #expect { try self.container(KeyRing([AccountKey.generate()])).open(fetched) } throws: { ($0 as? NimbusError)?.code == .decryptionFailed }
        // Saving without a key refuses, sending nothing in the clear.
        #expect { try self.container(nil).seal(self.clipboard()) } throws: { ($0 as? NimbusError)?.code == .encryptionKeyMissing }
        // A page of changes keeps what it cannot open out of `modified`.
        let page = ZoneChanges(zoneID: .default, modified: [fetched], deleted: [], syncToken: SyncToken("t"), moreComing: false)
        let opened = container(nil).openChanges(page)
        #expect(opened.modified.isEmpty && opened.unreadable.map(\.recordID) == [fetched.id])
        #expect(opened.unreadable.first?.error.code == .encryptionKeyMissing)
    }

    @Test func afterRotationNewWritesUseTheNewestKeyAndOldRecordsStillOpen() throws {
        let store = MemoryKeyStore(KeyRing([AccountKey.generate()]))
        let device = container(nil)
        device.keyStore = store
        let old = try #require(try Record.fromWire(try device.seal(clipboard("old")).wireRecord(), zoneID: .default))
        let newest = try device.rotateKey()
        let ids = try store.load().keys.map(\.id)
        #expect(newest.id == 2 && ids == [1, 2])
        let new = try device.seal(clipboard("new"))
        guard case .encrypted(let value)? = new.fields["value"], let bytes = value.ciphertext else { Issue.record("not sealed"); return }
        #expect(SealFormat.keyID(of: bytes) == 2)
        #expect(try device.open(old).encryptedValues["value"] == .string("correct horse battery staple"))
        // A device that has only key 1 reads the old record, and is told the key is missing for the new one.
        let behind = container(KeyRing([try #require(try store.load().key(id: 1))]))
        #expect(try behind.open(old).encryptedValues["value"] != nil)
        let fetchedNew = try #require(try Record.fromWire(new.wireRecord(), zoneID: .default))
        #expect { try behind.open(fetchedNew) } throws: { ($0 as? NimbusError)?.code == .encryptionKeyMissing }
    }

    @Test func theRecoveryPhraseRestoresEveryKeyVersionAndCatchesEveryTypo() throws {
        let ring = KeyRing([AccountKey.generate(id: 1), AccountKey.generate(id: 7)])
        let phrase = RecoveryPhrase.export(ring)
        #expect(phrase.split(separator: "-").allSatisfy { $0.count <= 4 })
        #expect(try RecoveryPhrase.import(phrase) == ring)
        #expect(try RecoveryPhrase.import(phrase.lowercased().replacingOccurrences(of: "-", with: " ")) == ring)
        // Every single-character substitution, at every position, is caught.
        let characters = Array(phrase)
        for index in characters.indices where characters[index] != "-" {
            var typo = characters
            typo[index] = characters[index] == "Q" ? "R" : "Q"
            #expect(throws: NimbusError.self) { try RecoveryPhrase.import(String(typo)) }
        }
        // Every other character in the last position too (it holds padding bits beside data bits).
        let last = try #require(characters.lastIndex { $0 != "-" })
        for replacement in RecoveryPhrase.alphabet where replacement != characters[last] {
            var typo = characters
            typo[last] = replacement
            #expect(throws: NimbusError.self, "\(replacement) for \(characters[last])") { try RecoveryPhrase.import(String(typo)) }
        }
        // A dropped group, and a character outside the alphabet.
        #expect(throws: NimbusError.self) { try RecoveryPhrase.import(String(phrase.dropFirst(5))) }
        #expect(throws: NimbusError.self) { try RecoveryPhrase.import(phrase.replacingOccurrences(of: "-", with: "U", options: [], range: phrase.range(of: "-"))) }
        // A fresh device restores and reads.
        let device = container(ring)
        let sealed = try #require(try Record.fromWire(try device.seal(clipboard()).wireRecord(), zoneID: .default))
        let fresh = container(KeyRing())
        try fresh.importRecoveryPhrase(try device.exportRecoveryPhrase())
        #expect(try fresh.open(sealed).encryptedValues["value"] == .string("correct horse battery staple"))
    }

    @Test func thePairingFragmentCarriesTheKeysAndTheFileStoreIsOwnerOnly() throws {
        let ring = KeyRing([AccountKey.generate(id: 1), AccountKey.generate(id: 2)])
        let invitation = PairingInvitation(code: "ABCD-EFGH-JK", expiresAt: Date(),
                                           pairingURL: URL(string: "nimbus://pair?server=http%3A%2F%2F127.0.0.1%3A8080&code=ABCD-EFGH-JK")!)
        let handed = invitation.handingOver(ring)
        #expect(handed.pairingURL.absoluteString.hasPrefix(invitation.pairingURL.absoluteString + "#k=1."))
        #expect(try KeyFragment.decode(handed.pairingURL) == ring)
        #expect(try KeyFragment.decode(invitation.pairingURL) == nil)
        #expect(try PairingLink(handed.pairingURL).code == "ABCD-EFGH-JK")
        #expect(throws: NimbusError.self) { try KeyFragment.decode(URL(string: "nimbus://pair?code=x#k=1.notbase64!")!) }

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-keys-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileKeyStore(fileURL: directory.appendingPathComponent("keys"))
        #expect(try store.load().isEmpty)
        try store.save(ring)
        #expect(try store.load() == ring)
        let mode = try FileManager.default.attributesOfItem(atPath: store.fileURL.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // The NIMBUS_KEY_FILE form: one bare base64url key is key 1.
        let bare = AccountKey.generate()
        try Data((bare.base64URL + "\n").utf8).write(to: store.fileURL)
        #expect(try store.load() == KeyRing([bare]))
        #expect(bare.base64URL.count == 43)
    }
}
