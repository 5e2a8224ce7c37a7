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

    /// A row's bytes go through the one writer as the decoded record does: the same bytes.
    @Test func writesTheBytesTheRecordWrites() throws {
        let record = Self.record(deleted: false)
        let storage = Record.storage(of: record.fields)
        #expect(storage.isWireForm)
        let output = Self.written(record, storedText: storage.text)
        var expected: [UInt8] = []
        record.writeJSON(to: &expected)
        #expect(output == expected)
        let text = String(decoding: output, as: UTF8.self)
        #expect(text.hasPrefix(#"{"recordName":"r \"1\"","recordType":"T","recordChangeTag":"qglj","fields":{"b":{"value":"AAEC/w==","type":"BYTES"},"#))
        #expect(text.hasSuffix(#""created":{"timestamp":1,"userRecordName":"_u","deviceID":"mac \"mini\""},"#
                               + #""modified":{"timestamp":-2,"userRecordName":"_v","deviceID":"phone\n"},"deleted":false,"zoneID":{"zoneName":"Z\\"}}"#))
    }

    @Test func writesATombstoneAsTheRecordDoes() {
        let record = Self.record(deleted: true)
        var expected: [UInt8] = []
        record.writeJSON(to: &expected)
        #expect(Self.written(record, storedText: "") == expected)
        #expect(String(decoding: expected, as: UTF8.self) == #"{"recordName":"r \"1\"","recordType":"T","deleted":true}"#)
    }

    @Test func theWireFormIsStoredUnlessAValueHoldsAnAsset() throws {
        let plain = Record.storage(of: Self.fields)
        #expect(try Record.fields(fromStored: JSONValue.parse(Array(plain.text.utf8))) == Self.fields)
        var withAsset = Self.fields
        withAsset["photo"] = .asset(AssetValue(fileChecksum: "abc", size: 3))
        let stored = Record.storage(of: withAsset)
        #expect(!stored.isWireForm)
        // The same writer's text: the asset without a download URL.
        #expect(stored.text == String(decoding: Record.wireFields(withAsset), as: UTF8.self))
        #expect(stored.text.contains(#""photo":{"value":{"fileChecksum":"abc","size":3},"type":"ASSETID"}"#))
        #expect(try Record.fields(fromStored: JSONValue.parse(Array(stored.text.utf8))) == withAsset)
    }
}
