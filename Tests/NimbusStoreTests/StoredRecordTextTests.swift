import NimbusTestSupport
import NimbusSupport
import Testing
import NimbusCore
@testable import NimbusStore

@Suite struct StoredRecordTextTests {
    private static let fields: [String: FieldValue] = [
        "s": .string("Alice's \"iPhone\" \\ ü\u{1}"), "i": .int64(-7), "d": .double(123.25), "t": .timestamp(1_795_000_000_123),
        "b": .bytes([0, 1, 2, 255]), "l": .list(elementType: .string, ["a", "b"].map(FieldValue.string)),
        "r": .reference(RecordReference(recordName: "other", zoneName: nil, action: .deleteSelf)),
    ]

    private static func record(deleted: Bool) -> Record {
        Record(recordName: "r \"1\"", recordType: "T", fields: fields, changeTag: ChangeTag.make(sequence: 1_234_567),
               created: RecordStamp(timestamp: 1, userRecordName: "_u", deviceID: "mac \"mini\""),
               modified: RecordStamp(timestamp: -2, userRecordName: "_v", deviceID: "phone\n"), deleted: deleted, zoneName: "Z\\")
    }

    /// Writes `record` through `StoredRecordText`, its fields column holding `storedText`.
    private static func written(_ record: Record, storedText: String) -> [UInt8] {
        func bytes(_ text: String, _ body: (UnsafeRawBufferPointer) -> Void) {
            var text = text
            text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        }
        var output = JSONPageWriter()
        bytes(record.recordName) { name in bytes(record.recordType) { type in bytes(storedText) { fields in
            bytes(record.created.userRecordName) { createdUser in bytes(record.created.deviceID) { createdDevice in
                bytes(record.modified.userRecordName) { modifiedUser in bytes(record.modified.deviceID) { modifiedDevice in
                    let text = StoredRecordText(
                        recordName: name, recordType: type, fields: fields, sequence: 1_234_567,
                        created: .init(timestamp: record.created.timestamp, userRecordName: createdUser, deviceID: createdDevice),
                        modified: .init(timestamp: record.modified.timestamp, userRecordName: modifiedUser, deviceID: modifiedDevice),
                        deleted: record.deleted)
                    text.writeJSON(zoneName: record.zoneName, to: &output)
                } }
            } }
        } } }
        return output.finish()
    }

    @Test func writesTheBytesTheRecordWrites() throws {
        let record = Self.record(deleted: false)
        let storage = Record.storage(of: record.fields)
        #expect(storage.isWireForm)
        let output = Self.written(record, storedText: storage.text)
        var expected: [UInt8] = []
        record.writeJSON(to: &expected)
        #expect(output == expected)
        #expect(try JSONValue.parse(output) == record.json())
    }

    @Test func writesATombstoneAsTheRecordDoes() {
        let record = Self.record(deleted: true)
        #expect(Self.written(record, storedText: "") == record.tombstoneJSON.serialized())
    }

    @Test func theWireFormIsStoredUnlessAValueHoldsAnAsset() throws {
        let plain = Record.storage(of: Self.fields)
        // The same document as the stored form (jsonb keeps either): members in another order.
        #expect(try JSONValue.parse(Array(plain.text.utf8)).serialized(sortedKeys: true)
                == Record.storedFields(Self.fields).serialized(sortedKeys: true))
        var withAsset = Self.fields
        withAsset["photo"] = .asset(AssetValue(fileChecksum: "abc", size: 3))
        let stored = Record.storage(of: withAsset)
        #expect(!stored.isWireForm)
        #expect(stored.text == Record.storedFields(withAsset).serializedString)
    }
}

@Suite struct RecordWireWriterTests {
    @Test func writingWithWireFieldsGivesTheSameDictionaryAsJSON() throws {
        for deleted in [false, true] {
            let fields: [String: FieldValue] = ["t": .string("a \"quoted\" \\ ü\u{1}"), "n": .int64(-3)]
            let record = Record(recordName: "r \"1\"", recordType: "T", fields: fields, changeTag: "z9",
                                created: RecordStamp(timestamp: 1, userRecordName: "_u", deviceID: "mac \"mini\""),
                                modified: RecordStamp(timestamp: -2, userRecordName: "_v", deviceID: "phone"), deleted: deleted, zoneName: "Z\\")
            var bytes: [UInt8] = Array("[".utf8)
            record.writeJSON(to: &bytes)
            bytes.append(UInt8(ascii: "]"))
            #expect(try JSONValue.parse(bytes) == .array([record.json()]))
            // Same members in the same order as json() writes them.
            #expect(Array(bytes.dropFirst().dropLast()) == record.json().serialized())
        }
    }
}
