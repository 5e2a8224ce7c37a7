import Testing
@testable import NimbusCore

@Suite struct StoredRecordTextTests {
    private static let fields: [String: FieldValue] = [
        "s": .string("Alice's \"iPhone\" \\ ü\u{1}"), "i": .int64(-7), "d": .double(123.25), "t": .timestamp(1_795_000_000_123),
        "b": .bytes([0, 1, 2, 255]), "l": .list(elementType: .string, ["a", "b"].map(FieldValue.string)),
    ]

    private static func record(deleted: Bool) -> Record {
        Record(recordName: "r \"1\"", recordType: "T", fields: fields, changeTag: ChangeTag.make(sequence: 1_234_567),
               created: RecordStamp(timestamp: 1, userRecordName: "_u", deviceID: "mac \"mini\""),
               modified: RecordStamp(timestamp: -2, userRecordName: "_v", deviceID: "phone\n"), deleted: deleted, zoneName: "Z\\")
    }

    /// Writes `record` through `StoredRecordText` with `storedText` as the fields column.
    private static func written(_ record: Record, storedText: String) -> [UInt8] {
        func bytes(_ text: String, _ body: (UnsafeRawBufferPointer) -> Void) {
            var text = text
            text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        }
        var output: [UInt8] = []
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
        return output
    }

    @Test func writesTheSameMembersInTheSameOrderAsTheRecord() throws {
        let record = Self.record(deleted: false)
        // The fields as PostgreSQL prints jsonb: spaces, members ordered by key length.
        let printed = #"{"b": {"type": "BYTES", "value": "AAEC/w=="}, "d": {"type": "DOUBLE", "value": 123.25}, "i": {"type": "INT64", "value": -7}, "l": {"type": "STRING_LIST", "value": ["a", "b"]}, "s": {"type": "STRING", "value": "Alice's \"iPhone\" \\ ü\u0001"}, "t": {"type": "TIMESTAMP", "value": 1795000000123}}"#
        let output = Self.written(record, storedText: printed)
        // The same document (members may come in another order: compared with sorted keys).
        #expect(try JSONValue.parse(output).serialized(sortedKeys: true) == record.json().serialized(sortedKeys: true))
        // Byte for byte what Record writes, but for the fields, which are spliced in as printed.
        var compact: [UInt8] = []
        record.writeJSON(fields: Array(printed.utf8), to: &compact)
        #expect(output == compact)
    }

    @Test func writesATombstoneAsTheRecordDoes() {
        let record = Self.record(deleted: true)
        #expect(Self.written(record, storedText: "{}") == record.tombstoneJSON.serialized())
    }

    @Test func fieldsWithReferencesOrAssetsAreNotReadAsStored() {
        func readsAsStored(_ text: String) -> Bool {
            var text = text
            return text.withUTF8 { fields in
                StoredRecordText(recordName: .init(start: nil, count: 0), recordType: .init(start: nil, count: 0), fields: UnsafeRawBufferPointer(fields),
                                 sequence: 1, created: .init(timestamp: 0, userRecordName: .init(start: nil, count: 0), deviceID: .init(start: nil, count: 0)),
                                 modified: .init(timestamp: 0, userRecordName: .init(start: nil, count: 0), deviceID: .init(start: nil, count: 0)),
                                 deleted: false).fieldsReadAsStored
            }
        }
        #expect(readsAsStored(#"{"a": {"type": "STRING", "value": "x"}, "n": {"type": "INT64_LIST", "value": [1, 2]}}"#))
        #expect(readsAsStored("{}"))
        #expect(readsAsStored(#"{"a": {"type": "STRING", "value": "a REFERENCE or ASSETID"}}"#))
        #expect(!readsAsStored(#"{"r": {"type": "REFERENCE", "value": {"action": "NONE", "recordName": "x"}}}"#))
        #expect(!readsAsStored(#"{"r": {"type": "REFERENCE_LIST", "value": [{"action": "NONE", "recordName": "x"}]}}"#))
        #expect(!readsAsStored(#"{"p": {"type": "ASSETID", "value": {"size": 3, "fileChecksum": "x"}}}"#))
        #expect(!readsAsStored(#"{"p": {"type": "ASSETID_LIST", "value": []}}"#))
        // A string that starts like one of those types costs its record the slower way, nothing more.
        #expect(!readsAsStored(#"{"a": {"type": "STRING", "value": "ASSETIDs"}}"#))
    }
}
