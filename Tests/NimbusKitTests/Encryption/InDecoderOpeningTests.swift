import Foundation
import Testing
@testable import NimbusKit

/// The changes decoder opens each sealed value where it meets it (`PageOpening`, issue 30). Its
/// pages must be exactly those of the reference: the page decoded through the JSON tree
/// (`Database.zoneChanges`), then opened record by record (`Container.openChanges`) — the same
/// readable records with the same plaintexts and kept ciphertexts, the same unreadable records in
/// the same order with the same codes and reasons; and a ciphertext moved to another record, field
/// or zone, or with a byte flipped, is unreadable naming the field, never data.
@Suite("End-to-end encryption: sealed values opened inside the changes decoder")
struct InDecoderOpeningTests {
    static let key1 = try! AccountKey(id: 1, bytes: Data(repeating: 3, count: 32))
    static let key2 = try! AccountKey(id: 2, bytes: Data(repeating: 5, count: 32))
    static let container = "iCloud.com.example.InDecoder"
    let zone = ZoneID("z")

    /// A sealed string (base64) of `field` of `record` in `zone`.
    func seal(_ text: String, record: String, field: String, zone: String = "z", type: String = "Item",
              key: AccountKey = InDecoderOpeningTests.key1) throws -> String {
        let context = SealContext(container: Self.container, zone: zone, recordType: type, recordName: record, field: field)
        return try SealFormat.sealField(try FieldPlaintext.encode(.string(text)), key: key, context: context).base64EncodedString()
    }

    func page(_ items: [(name: String, fields: [String: String])], type: String = "Item") -> Data {
        let records = items.map { item in
            let fields = item.fields.sorted { $0.key < $1.key }.map { #""\#($0.key)":\#($0.value)"# }.joined(separator: ",")
            return #"{"recordName":"\#(item.name)","recordType":"\#(type)","recordChangeTag":"t","fields":{\#(fields)},"#
                + #""created":{"timestamp":1,"userRecordName":"_u","deviceID":"d"},"modified":{"timestamp":2,"userRecordName":"_u","deviceID":"d"},"#
                + #""deleted":false,"zoneID":{"zoneName":"z"}}"#
        }
        return Data(#"{"records":[\#(records.joined(separator: ","))],"syncToken":"tok","moreComing":true}"#.utf8)
    }

    func sealed(_ base64: String) -> String { #"{"value":"\#(base64)","type":"ENCRYPTED_BYTES"}"# }
    func plain(_ text: String) -> String { #"{"value":"\#(text)","type":"STRING"}"# }

    func device(_ keys: [AccountKey]?) -> Container {
        let device = Container(identifier: Self.container, configuration: NimbusConfiguration(serverURL: URL(string: "http://127.0.0.1:9")!, token: "t"))
        if let keys { device.keyStore = MemoryKeyStore(KeyRing(keys)) }
        return device
    }

    /// The decoder's page against the tree's page opened afterwards: equal in every part.
    func expectSame(_ data: Data, device: Container, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let reference = device.openChanges(try Database.zoneChanges(JSON.decodeObject(data), zone: zone))
        let opened = try ChangesPageDecoder.decode(data, zone: zone, opening: PageOpening(device))
        #expect(opened.modified == reference.modified, sourceLocation: sourceLocation)
        #expect(opened.modified.map(\.serverFields) == reference.modified.map(\.serverFields), sourceLocation: sourceLocation)
        for (a, b) in zip(opened.modified, reference.modified) {
            for (name, value) in a.fields {
                guard case .encrypted(let x) = value else { continue }
                guard case .encrypted(let y)? = b.fields[name] else { Issue.record("\(a.recordName).\(name)"); continue }
                #expect(x.plaintext != nil && x.ciphertext != nil, "\(a.recordName).\(name) opened, ciphertext kept", sourceLocation: sourceLocation)
                #expect(x.ciphertext == y.ciphertext, sourceLocation: sourceLocation)
            }
        }
        // When several sealed fields of one record fail, the reference names the first in its
        // dictionary's (hashed, per-process) order, the decoder the first in page order: the same
        // error otherwise.
        #expect(opened.unreadable.count == reference.unreadable.count, sourceLocation: sourceLocation)
        for (a, b) in zip(opened.unreadable, reference.unreadable) {
            guard a != b else { continue }
            // Only which field is named may differ: "r2.body" against "r2.title".
            let named = try Regex("\\b\(a.recordID.recordName)\\.[A-Za-z]+")
            var (x, y) = (a, b)
            (x.error.fieldName, y.error.fieldName) = (nil, nil)
            x.error.reason = x.error.reason.replacing(named, with: "FIELD")
            y.error.reason = y.error.reason.replacing(named, with: "FIELD")
            #expect(x == y && x.error.reason.contains("FIELD"), "\(a) against \(b)", sourceLocation: sourceLocation)
        }
        #expect(opened.syncToken == reference.syncToken && opened.moreComing == reference.moreComing, sourceLocation: sourceLocation)
        #expect(opened.deleted.map(\.id) == reference.deleted.map(\.id), sourceLocation: sourceLocation)
    }

    @Test func aMixedPageDecodesToTheTreeReferenceOpened() throws {
        var flipped = try #require(Data(base64Encoded: try seal("flipped", record: "r4", field: "title")))
        flipped[flipped.count / 2] ^= 0x01
        let items: [(name: String, fields: [String: String])] = [
            ("r0", ["note": plain("plain 0")]),
            ("r1", ["title": sealed(try seal("secret 1", record: "r1", field: "title")), "note": plain("n1")]),
            ("r2", ["title": sealed(try seal("a", record: "r2", field: "title")), "body": sealed(try seal("b", record: "r2", field: "body"))]),
            ("r3", ["title": sealed(try seal("no key", record: "r3", field: "title", key: Self.key2))]),
            ("r4", ["title": sealed(flipped.base64EncodedString())]),
            ("r5", ["title": sealed(try seal("from r1", record: "r1", field: "title"))]),                 // another record's
            ("r6", ["title": sealed(try seal("from body", record: "r6", field: "body"))]),                // another field's
            ("r7", ["title": sealed(try seal("from y", record: "r7", field: "title", zone: "y"))]),       // another zone's
            ("r8", ["title": #"{"value":null,"type":"ENCRYPTED_BYTES"}"#, "note": plain("n8")]),
            ("r9", ["title": sealed(try seal("escaped", record: "r9", field: "title").replacingOccurrences(of: "/", with: "\\/"))]),
            ("r10", ["title": sealed(try seal("last", record: "r10", field: "title"))]),
            ("r11", ["title": sealed(try seal("a \"quote\", a \\ and a / – é\n", record: "r11", field: "title"))]),  // escaped in its plaintext
            ("r12", ["title": sealed(try seal("C:\\path/to\tfile", record: "r12", field: "title"))]),  // escapes, no quote
        ]
        let data = page(items)
        try expectSame(data, device: device([Self.key1]))
        try expectSame(data, device: device([Self.key1, Self.key2]))
        try expectSame(data, device: device([]))
        try expectSame(data, device: device(nil))

        let opened = try ChangesPageDecoder.decode(data, zone: zone, opening: PageOpening(device([Self.key1])))
        #expect(opened.modified.map(\.recordName) == ["r0", "r1", "r2", "r8", "r9", "r10", "r11", "r12"])
        #expect(opened.modified.suffix(2).map { $0.encryptedValues["title"]?.stringValue } == ["a \"quote\", a \\ and a / – é\n", "C:\\path/to\tfile"])
        #expect(opened.modified.first { $0.recordName == "r2" }?.encryptedValues["body"]?.stringValue == "b")
        #expect(opened.unreadable.map(\.recordID.recordName) == ["r3", "r4", "r5", "r6", "r7"])
        #expect(opened.unreadable.map(\.error.code) == [.encryptionKeyMissing] + Array(repeating: .decryptionFailed, count: 4))
        #expect(opened.sealedValues == 12)
    }

    /// A moved or flipped ciphertext never opens: each is unreadable, `decryptionFailed`, naming
    /// its record and field; the records beside it still open.
    @Test func aMovedOrFlippedCiphertextIsUnreadableNamingTheField() throws {
        let good = try seal("good", record: "a", field: "secret")
        var bytes = try #require(Data(base64Encoded: good))
        var cases: [(name: String, value: String)] = []
        for index in [0, 5, 17, bytes.count - 1] {  // version, key id, nonce, tag
            bytes[index] ^= 0x40
            cases.append(("flip\(index)", bytes.base64EncodedString()))
            bytes[index] ^= 0x40
        }
        cases.append(("moved", good))  // record "a"'s value in another record
        cases.append(("cut", String(good.dropLast(4))))
        var items: [(name: String, fields: [String: String])] = [("a", ["secret": sealed(good)])]
        for (name, value) in cases { items.append((name, ["secret": sealed(value), "note": plain("x")])) }
        items.append(("b", ["secret": sealed(try seal("also good", record: "b", field: "secret"))]))
        let device = device([Self.key1])
        let data = page(items)
        try expectSame(data, device: device)
        let opened = try ChangesPageDecoder.decode(data, zone: zone, opening: PageOpening(device))
        #expect(opened.modified.map(\.recordName) == ["a", "b"])
        #expect(opened.modified.map { $0.encryptedValues["secret"]?.stringValue } == ["good", "also good"])
        #expect(opened.unreadable.map(\.recordID.recordName) == cases.map(\.name))
        for record in opened.unreadable {
            #expect(record.error.code == .decryptionFailed, "\(record.recordID.recordName)")
            #expect(record.error.reason.contains("secret") && record.error.reason.contains(record.recordID.recordName),
                    "\(record.recordID.recordName): \(record.error.reason)")
        }
    }

    /// `Database.decodeChanges` (what fetches and the engine call) opens in the decoder: the
    /// page's sealed values come out opened, with no second pass over it.
    @Test func decodeChangesOpensInTheDecoder() async throws {
        let device = device([Self.key1])
        let database = device.privateDatabase
        let data = page([("r1", ["title": sealed(try seal("secret", record: "r1", field: "title"))]), ("r2", ["title": sealed("AAAA")])])
        let opened = try await database.decodeChanges(data, zone: zone)
        #expect(opened.modified.map { $0.encryptedValues["title"]?.stringValue } == ["secret"])
        #expect(opened.unreadable.map(\.recordID.recordName) == ["r2"])
        #expect(opened.unreadable.first?.error.code == .decryptionFailed)
    }
}
