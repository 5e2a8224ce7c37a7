import Foundation
import Testing
@testable import NimbusKit

/// `FieldOpener` keeps the zone key and the associated data's fixed part from one field to the
/// next: every field must still open exactly where it was sealed and nowhere else, whatever the
/// opener opened before it (the zone, record type or key id changing between fields).
@Suite("End-to-end encryption: one opener for a page of fields")
struct FieldOpenerTests {
    static let keys = try! KeyRing([AccountKey(id: 1, bytes: Data(repeating: 7, count: 32)), AccountKey(id: 2, bytes: Data(repeating: 9, count: 32))])
    static let container = "iCloud.com.example.Opener"

    func context(_ zone: String, _ type: String, _ record: String, _ field: String) -> SealContext {
        SealContext(container: Self.container, zone: zone, recordType: type, recordName: record, field: field)
    }

    func seal(_ text: String, _ context: SealContext, keyID: UInt32 = 1) throws -> Data {
        guard let key = Self.keys.key(id: keyID) else { throw TestFailure("no key \(keyID)") }
        return try SealFormat.sealField(Data(text.utf8), key: key, context: context)
    }

    @Test func fieldsOfChangingZonesTypesRecordsAndKeysAllOpenWithOneOpener() throws {
        let long = String(repeating: "é", count: 40_000)  // 80,000 UTF-8 bytes: the 65,535-byte cut
        let contexts = [
            (context("a", "T", "r1", "f"), UInt32(1)), (context("a", "T", "r2", "f"), 1), (context("a", "T", "r2", "g"), 1),
            (context("a", "U", "r2", "g"), 1), (context("b", "U", "r2", "g"), 1), (context("b", "U", "r2", "g"), 2),
            (context("b", "U", "r3", "g"), 2), (context("a", "T", "r1", "f"), 1), (context("a", "T", long, "ü"), 1),
            (context("a", "T", "r4", "f"), 2),
        ]
        var opener = FieldOpener(container: Self.container, ring: Self.keys)
        for (n, (context, keyID)) in contexts.enumerated() {
            let sealed = try seal("value \(n)", context, keyID: keyID)
            let opened = try opener.open(sealed, zone: context.zone, recordType: context.recordType, recordName: context.recordName, field: context.field)
            #expect(opened == Data("value \(n)".utf8), "field \(n): \(context)")
            // The one-off path (a fresh opener, what SealFormat.openField does) agrees.
            #expect(try SealFormat.openField(sealed, keys: Self.keys, context: context) == opened)
        }
    }

    @Test func aCiphertextOpenedAsAnotherRecordFieldTypeOrZoneFailsAfterTheOpenerKeptItsParts() throws {
        let home = context("a", "T", "r1", "f")
        let sealed = try seal("secret", home)
        let elsewhere = [context("a", "T", "r2", "f"), context("a", "T", "r1", "g"), context("a", "U", "r1", "f"), context("b", "T", "r1", "f")]
        for other in elsewhere {
            var opener = FieldOpener(container: Self.container, ring: Self.keys)
            // Prime the opener with a field of the place under test, then with the home's own.
            let neighbour = try seal("neighbour", other)
            _ = try opener.open(neighbour, zone: other.zone, recordType: other.recordType, recordName: other.recordName, field: other.field)
            #expect(try opener.open(sealed, zone: home.zone, recordType: home.recordType, recordName: home.recordName, field: home.field) == Data("secret".utf8))
            #expect(throws: EncryptionError.self, "opened as \(other)") {
                try opener.open(sealed, zone: other.zone, recordType: other.recordType, recordName: other.recordName, field: other.field)
            }
        }
        var opener = FieldOpener(container: Self.container, ring: KeyRing([try AccountKey(id: 2, bytes: Data(repeating: 9, count: 32))]))
        #expect(throws: EncryptionError.self, "key 1 missing") {
            try opener.open(sealed, zone: home.zone, recordType: home.recordType, recordName: home.recordName, field: home.field)
        }
    }

    @Test func aPageWithoutSealedValuesCountsNoneAndOneWithASealedValueIsOpenedNotPassedThrough() throws {
        let plain = #"{"records":[{"recordName":"r1","recordType":"E","fields":{"s":{"value":"a","type":"STRING"}}}],"syncToken":"t","moreComing":false}"#
        #expect(try ChangesPageDecoder.decode(Data(plain.utf8), zone: .default).sealedValues == 0)
        let sealed = #"{"records":[{"recordName":"r1","recordType":"E","fields":{"s":{"value":"AQAAAAEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","type":"ENCRYPTED_BYTES"}}}],"syncToken":"t","moreComing":false}"#
        let page = try ChangesPageDecoder.decode(Data(sealed.utf8), zone: .default)
        #expect(page.sealedValues == 1)
        // A container without keys: the sealed record is unreadable, never handed over sealed.
        let container = Container(identifier: Self.container, configuration: NimbusConfiguration(serverURL: URL(string: "http://127.0.0.1:9")!, token: "t"))
        let opened = container.openChanges(page)
        #expect(opened.modified.isEmpty && opened.unreadable.map(\.recordID.recordName) == ["r1"])
        #expect(container.openChanges(try ChangesPageDecoder.decode(Data(plain.utf8), zone: .default)).modified.count == 1)
    }
}
