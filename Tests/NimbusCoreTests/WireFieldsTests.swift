import Testing
@testable import NimbusCore

@Suite struct WireFieldsTests {
    private func wire(_ text: String) -> String? {
        WireFields.fromStored(text).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func rewritesPostgresTextIntoTheCompactValueFirstForm() {
        #expect(wire(#"{"title": {"type": "STRING", "value": "a, b: \"c\" } ]"}, "n": {"type": "INT64", "value": -12}}"#)
                == #"{"title":{"value":"a, b: \"c\" } ]","type":"STRING"},"n":{"value":-12,"type":"INT64"}}"#)
        #expect(wire(#"{"tags": {"type": "STRING_LIST", "value": ["x", "y" , "z"]}, "e": {"type": "INT64_LIST", "value": []}}"#)
                == #"{"tags":{"value":["x","y","z"],"type":"STRING_LIST"},"e":{"value":[],"type":"INT64_LIST"}}"#)
        #expect(wire("{}") == "{}")
        #expect(wire(#" { "d" : { "type" : "DOUBLE" , "value" : 1.5e300 } } "#) == #"{"d":{"value":1.5e300,"type":"DOUBLE"}}"#)
    }

    @Test func matchesWhatTheRecordWriterSendsForScalarFields() throws {
        let fields: [String: FieldValue] = [
            "s": .string("Alice's \"iPhone\" \\ ü"), "i": .int64(-7), "d": .double(123.25), "t": .timestamp(1_795_000_000_123),
            "b": .bytes([0, 1, 2, 255]), "l": .list(elementType: .string, ["a", "b"].map(FieldValue.string)),
        ]
        let stored = Record.storedFields(fields).serializedString
        let parsedWire = try JSONValue.parse(Array(try #require(WireFields.fromStored(stored))))
        var record = Record(recordName: "r", recordType: "T", fields: fields, changeTag: "1",
                            created: RecordStamp(timestamp: 0, userRecordName: "u", deviceID: "d"),
                            modified: RecordStamp(timestamp: 0, userRecordName: "u", deviceID: "d"), deleted: false, zoneName: "z")
        #expect(parsedWire == record.json()["fields"])
        record.fields = [:]
        #expect(record.json()["fields"] == .object([:]))
    }

    @Test func declinesValuesThatHoldObjectsAndTextOfAnotherShape() {
        #expect(wire(#"{"ref": {"type": "REFERENCE", "value": {"action": "NONE", "recordName": "x"}}}"#) == nil)
        #expect(wire(#"{"refs": {"type": "REFERENCE_LIST", "value": [{"action": "NONE", "recordName": "x"}]}}"#) == nil)
        #expect(wire(#"{"a": {"type": "STRING"}}"#) == nil)
        #expect(wire(#"{"a": {"type": "STRING", "value": "x", "extra": 1}}"#) == nil)
        #expect(wire(#"{"a": {"type": "STRING", "value": "x"}"#) == nil)
        #expect(wire(#"{"a": {"type": "STRING", "value": "x}}"#) == nil)
        #expect(wire(#"{"a": {"type": "STRING", "value": "x"}} trailing"#) == nil)
        // Another order than PostgreSQL's is another shape: decoded instead.
        #expect(wire(#"{"a": {"value": "x", "type": "STRING"}}"#) == nil)
        #expect(wire("") == nil)
        #expect(wire("[]") == nil)
    }
}

@Suite struct RecordWireWriterTests {
    @Test func writingWithStoredFieldsGivesTheSameDictionaryAsJSON() throws {
        for deleted in [false, true] {
            let fields: [String: FieldValue] = ["t": .string("a \"quoted\" \\ ü\u{1}"), "n": .int64(-3)]
            let record = Record(recordName: "r \"1\"", recordType: "T", fields: fields, changeTag: "z9",
                                created: RecordStamp(timestamp: 1, userRecordName: "_u", deviceID: "mac \"mini\""),
                                modified: RecordStamp(timestamp: -2, userRecordName: "_v", deviceID: "phone"), deleted: deleted, zoneName: "Z\\")
            let wireFields = try #require(WireFields.fromStored(Record.storedFields(fields).serializedString))
            var bytes: [UInt8] = Array("[".utf8)
            record.writeJSON(fields: wireFields, to: &bytes)
            bytes.append(UInt8(ascii: "]"))
            #expect(try JSONValue.parse(bytes) == .array([record.json()]))
            // Same members in the same order as json() writes them.
            #expect(Array(bytes.dropFirst().dropLast()) == record.json().serialized())
        }
    }
}
