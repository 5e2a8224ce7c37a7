import Foundation
import Testing
@testable import NimbusKit

/// What a page's opening keeps from one field to the next — one `OpeningKey` per zone key (with
/// libcrypto: one context, only its nonce set per message, and one plaintext buffer), the page
/// opened in place — must never leak from one field into the next: each message opens with its
/// own nonce and associated data to exactly its own bytes, a failure does not poison the next,
/// and a page keeps its order with the unreadable records taken out.
@Suite("End-to-end encryption: opening a page field after field")
struct PageOpeningTests {
    static let key1 = try! AccountKey(id: 1, bytes: Data(repeating: 7, count: 32))
    static let key2 = try! AccountKey(id: 2, bytes: Data(repeating: 9, count: 32))
    static let container = "iCloud.com.example.PageOpening"

    /// Messages of every length from 0 to 300 bytes (the buffer grows past its first size, then
    /// shorter ones follow longer ones), each with its own nonce and associated data, opened one
    /// after another with one key; every tenth is changed (tag, ciphertext, nonce or associated
    /// data) and must fail without disturbing the ones after it.
    @Test func oneKeyOpensMessageAfterMessageWithItsOwnNonceAndAssociatedData() throws {
        let key = Primitives.random(32)
        let opening = try OpeningKey(key)
        let lengths = Array(0...300) + [17, 0, 299, 1, 64]
        for (index, length) in lengths.enumerated() {
            let plaintext = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) })
            let nonce = Primitives.random(12), aad = Data("record \(index)".utf8)
            let sealed = try Primitives.seal(key: key, nonce: nonce, plaintext: plaintext, aad: aad)
            var (openNonce, openAAD, box) = (nonce, aad, sealed)
            switch index % 10 {
            case 3: box[box.count - 1] ^= 0x01           // the tag
            case 6 where length > 0: box[0] ^= 0x80      // the ciphertext
            case 7: openNonce[0] ^= 0x01                 // another nonce
            case 9: openAAD = Data("record \(index + 1)".utf8)  // moved to the next record
            default: break
            }
            let changed = box != sealed || openNonce != nonce || openAAD != aad
            let opened = try? open(opening, nonce: openNonce, sealed: box, aad: openAAD)
            if changed {
                #expect(opened == nil, "message \(index) (length \(length)) opened although changed")
            } else {
                #expect(opened == plaintext, "message \(index) (length \(length))")
            }
        }
    }

    /// Two keys' openers used alternately on one thread (a page whose records change key id or
    /// zone) each keep opening their own messages, and neither opens the other's.
    @Test func twoKeysOpenedAlternatelyOnOneThreadStayApart() throws {
        let (a, b) = (Primitives.random(32), Primitives.random(32))
        let (openA, openB) = (try OpeningKey(a), try OpeningKey(b))
        for index in 0..<50 {
            let nonce = Primitives.random(12), aad = Data([UInt8(index)]), plaintext = Data("field \(index)".utf8)
            let sealedA = try Primitives.seal(key: a, nonce: nonce, plaintext: plaintext, aad: aad)
            let sealedB = try Primitives.seal(key: b, nonce: nonce, plaintext: plaintext + plaintext, aad: aad)
            #expect(try open(openA, nonce: nonce, sealed: sealedA, aad: aad) == plaintext)
            #expect(try open(openB, nonce: nonce, sealed: sealedB, aad: aad) == plaintext + plaintext)
            #expect((try? open(openA, nonce: nonce, sealed: sealedB, aad: aad)) == nil)
            #expect((try? open(openB, nonce: nonce, sealed: sealedA, aad: aad)) == nil)
        }
    }

    /// A page of plain records, records that open (one with two sealed fields), one sealed with a
    /// key this device lacks, one whose ciphertext was changed, one moved from another record and
    /// one whose plaintext is not a typed value: the readable ones come out in page order with their
    /// plaintexts and their base fields equal to their fields; the others are unreadable, in page
    /// order, each with its own code and reason.
    @Test func aPageKeepsItsOrderAndTakesOutWhatDoesNotOpen() throws {
        let zone = ZoneID("z")
        func seal(_ text: String, record: String, field: String, key: AccountKey = PageOpeningTests.key1, typed: Bool = true) throws -> String {
            let context = SealContext(container: Self.container, zone: zone.zoneName, recordType: "Item", recordName: record, field: field)
            let plaintext = typed ? try FieldPlaintext.encode(.string(text)) : Data(text.utf8)
            return try SealFormat.sealField(plaintext, key: key, context: context).base64EncodedString()
        }
        var tampered = try Data(base64Encoded: seal("changed", record: "r3", field: "title")) ?? Data()
        tampered[20] ^= 0x01
        let items: [(name: String, fields: [String: (value: String, type: String)])] = [
            ("r0", ["note": ("plain 0", "STRING")]),
            ("r1", ["title": (try seal("secret 1", record: "r1", field: "title"), "ENCRYPTED_BYTES"), "note": ("plain 1", "STRING")]),
            ("r2", ["title": (try seal("no key", record: "r2", field: "title", key: Self.key2), "ENCRYPTED_BYTES")]),
            ("r3", ["title": (tampered.base64EncodedString(), "ENCRYPTED_BYTES")]),
            ("r4", ["title": (try seal("secret 4", record: "r4", field: "title"), "ENCRYPTED_BYTES"),
                    "body": (try seal("body 4", record: "r4", field: "body"), "ENCRYPTED_BYTES"), "note": ("plain 4", "STRING")]),
            ("r5", ["title": (try seal("from r4", record: "r4", field: "title"), "ENCRYPTED_BYTES")]),
            ("r6", ["title": (try seal("not json", record: "r6", field: "title", typed: false), "ENCRYPTED_BYTES")]),
            ("r7", ["title": (try seal("secret 7", record: "r7", field: "title"), "ENCRYPTED_BYTES")]),
            ("r8", ["note": ("plain 8", "STRING")]),
        ]
        let records = items.map { item in
            let fields = item.fields.map { #""\#($0.key)":{"value":"\#($0.value.value)","type":"\#($0.value.type)"}"# }.joined(separator: ",")
            return #"{"recordName":"\#(item.name)","recordType":"Item","recordChangeTag":"t","fields":{\#(fields)},"#
                + #""created":{"timestamp":1,"userRecordName":"_u","deviceID":"d"},"modified":{"timestamp":1,"userRecordName":"_u","deviceID":"d"}}"#
        }
        let json = #"{"zoneID":{"zoneName":"z"},"records":[\#(records.joined(separator: ","))],"syncToken":"tok","moreComing":false}"#
        let device = Container(identifier: Self.container, configuration: NimbusConfiguration(serverURL: URL(string: "http://127.0.0.1:9")!, token: "t"))
        device.keyStore = MemoryKeyStore(KeyRing([Self.key1]))
        let page = device.openChanges(try ChangesPageDecoder.decode(Data(json.utf8), zone: zone))

        #expect(page.modified.map(\.recordName) == ["r0", "r1", "r4", "r7", "r8"])
        let expected: [String: [String: String]] = [
            "r0": ["note": "plain 0"], "r1": ["title": "secret 1", "note": "plain 1"],
            "r4": ["title": "secret 4", "body": "body 4", "note": "plain 4"], "r7": ["title": "secret 7"], "r8": ["note": "plain 8"],
        ]
        for record in page.modified {
            let texts = record.fields.mapValues { $0.decrypted?.stringValue ?? "?" }
            #expect(texts == expected[record.recordName], "\(record.recordName)")
            #expect(record.serverFields == record.fields, "\(record.recordName): base fields")
            for (name, value) in record.fields where items.first(where: { $0.name == record.recordName })?.fields[name]?.type == "ENCRYPTED_BYTES" {
                guard case .encrypted(let encrypted) = value else { Issue.record("\(record.recordName).\(name) is not encrypted"); continue }
                #expect(encrypted.ciphertext != nil, "\(record.recordName).\(name) keeps its ciphertext")
            }
        }
        #expect(page.unreadable.map(\.recordID.recordName) == ["r2", "r3", "r5", "r6"])
        #expect(page.unreadable.map(\.error.code) == [.encryptionKeyMissing, .decryptionFailed, .decryptionFailed, .decryptionFailed])
        #expect(page.unreadable.map(\.error.reason).map { $0.contains("not a typed value") } == [false, false, false, true])
        #expect(page.unreadable[1].error.reason.contains("does not open with key 1"))
        #expect(page.syncToken == SyncToken("tok"))
    }

    private func open(_ opening: OpeningKey, nonce: Data, sealed: Data, aad: Data) throws -> Data {
        let tagStart = sealed.count - Primitives.tagSize
        return try nonce.withUnsafeBytes { n in
            try sealed.withUnsafeBytes { s in
                try aad.withUnsafeBytes { a in
                    try opening.open(nonce: n, ciphertext: UnsafeRawBufferPointer(rebasing: s[..<tagStart]),
                                     tag: UnsafeRawBufferPointer(rebasing: s[tagStart...]), aad: a) { Data($0) }
                }
            }
        }
    }
}
