import NimbusSupport
@testable import NimbusCore
import Testing

/// The record dictionary, the stored form of fields and change tags (docs/api.md Records).
@Suite struct RecordTests {
    static let fields: [String: FieldValue] = [
        "title": .string("Safari"), "count": .int64(3), "ratio": .double(0.5), "at": .timestamp(1_795_000_000_000),
        "blob": .bytes([0, 255]), "parent": .reference(RecordReference(recordName: "p", zoneName: "Z", action: .deleteSelf)),
        "photo": .asset(AssetValue(fileChecksum: "c2hh", size: 9, receipt: "rc")),
        "tags": .list(elementType: .string, ["a", "b"].map(FieldValue.string)),
        "empty": .list(elementType: .int64, []),
    ]

    let record = Record(recordName: "evt-1", recordType: "BlockedAppEvent", fields: fields, changeTag: "3k1x9",
                        created: RecordStamp(timestamp: 1, userRecordName: "_u1", deviceID: "mac-mini"),
                        modified: RecordStamp(timestamp: 2, userRecordName: "_u1", deviceID: "iphone"), zoneName: "_defaultZone")

    @Test func theRecordDictionaryHasTheAPIShape() {
        let json = record.json()
        #expect(json["recordName"] == "evt-1")
        #expect(json["recordType"] == "BlockedAppEvent")
        #expect(json["recordChangeTag"] == "3k1x9")
        #expect(json["deleted"] == false)
        #expect(json["zoneID"] == ["zoneName": "_defaultZone"])
        #expect(json["created"] == ["timestamp": 1, "userRecordName": "_u1", "deviceID": "mac-mini"])
        #expect(json["modified"]?["deviceID"] == "iphone")
        #expect(json["fields"]?["title"] == ["value": "Safari", "type": "STRING"])
        #expect(json["fields"]?["at"] == ["value": 1_795_000_000_000, "type": "TIMESTAMP"])
        #expect(json["fields"]?["tags"]?["type"] == "STRING_LIST")
        #expect(json["fields"]?.objectValue?.keys == Self.fields.keys.sorted())
    }

    @Test func writingTheRecordDirectlyGivesTheSameBytesAsTheTree() {
        var deleted = record
        deleted.deleted = true
        deleted.fields = [:]
        var escaped = record
        escaped.recordName = "quote\"back\\slash\u{1}é"
        escaped.fields["ünïcode \"key\""] = .string("line\nbreak")
        for candidate in [record, deleted, escaped] {
            var bytes: [UInt8] = Array("prefix".utf8)
            candidate.writeJSON(to: &bytes)
            #expect(bytes == Array("prefix".utf8) + candidate.json().serialized(), "\(candidate.recordName)")
        }
    }

    @Test func wireFieldsAreTheTreesBytesForEveryTypeAndEveryFormOfDouble() {
        let doubles: [Double] = [0, -0.0, 1, 0.1, -2.5, 1e-5, 1.5e300, 1.2345678901234568e20, 9_007_199_254_740_993, .leastNonzeroMagnitude]
        var fields: [String: FieldValue] = [:]
        for (index, number) in doubles.enumerated() { fields["d\(index)"] = .double(number) }
        fields["doubles"] = .list(elementType: .double, doubles.map(FieldValue.double))
        fields["times"] = .list(elementType: .timestamp, [.timestamp(-1), .timestamp(Int64.max)])
        fields["blobs"] = .list(elementType: .bytes, [.bytes([]), .bytes([1, 2, 3, 4])])
        fields["refs"] = .list(elementType: .reference, [.reference(RecordReference(recordName: "r")),
                                                         .reference(RecordReference(recordName: "s", zoneName: "z", action: .deleteSelf))])
        fields["photos"] = .list(elementType: .assetID, [.asset(AssetValue(fileChecksum: "c", size: 0, receipt: "r", downloadURL: "https://x/y"))])
        fields["ints"] = .list(elementType: .int64, [.int64(Int64.min), .int64(0)])
        fields["escapes"] = .string("\u{0}\u{1f}\"\\/é\u{2028}" + String(repeating: "plain", count: 5))
        var bytes: [UInt8] = []
        let candidate = Record(recordName: "r", recordType: "T", fields: fields, changeTag: "1", created: record.created,
                               modified: record.modified, zoneName: "z")
        candidate.writeJSON(to: &bytes)
        #expect(bytes == candidate.json().serialized())
    }

    @Test func quotedTypeNamesAreTheNamesAsJSONStrings() {
        for base in FieldType.Base.allCases {
            for isList in [false, true] {
                let type = FieldType(base, isList: isList)
                #expect(type.quotedName.description == "\"\(type.name)\"")
            }
        }
        #expect(FieldType.encryptedBytes.quotedName.description == "\"ENCRYPTED_BYTES\"")
        #expect(FieldType(.string, isList: true, isEncrypted: true).quotedName.description == "\"ENCRYPTED_BYTES\"")
        #expect(FieldType.spellings.map(\.description) == FieldType.names)
        #expect(FieldType.all.map(\.name) == FieldType.names && Set(FieldType.all).count == 15)
        #expect(FieldType.names.allSatisfy { FieldType(name: $0) != nil })
    }

    @Test func desiredKeysLimitTheFieldsButNotTheSystemMembers() {
        let json = record.json(desiredKeys: ["title", "nonexistent"])
        #expect(json["fields"]?.objectValue?.keys == ["title"])
        #expect(json["recordChangeTag"] == "3k1x9")
        #expect(record.json(desiredKeys: [])["fields"] == .object([:]))
    }

    @Test func aTombstoneIsShortAndSaysDeleted() {
        #expect(record.tombstoneJSON == ["recordName": "evt-1", "recordType": "BlockedAppEvent", "deleted": true])
    }

    @Test func storedFieldsReadBackToTheSameValues() throws {
        let stored = Record.storedFields(Self.fields)
        #expect(try Record.fields(fromStored: stored) == Self.fields)
        // Through text too, as the database keeps it.
        let reparsed = try JSONValue.parse(stored.serialized())
        #expect(try Record.fields(fromStored: reparsed) == Self.fields)
    }

    @Test func storedFieldsAreSortedAndTyped() {
        let stored = Record.storedFields(["b": .int64(1), "a": .string("x")])
        #expect(stored.serializedString == #"{"a":{"type":"STRING","value":"x"},"b":{"type":"INT64","value":1}}"#)
    }

    @Test(arguments: [#"[]"#, #"{"a": {"value": 1}}"#, #"{"a": {"type": "INT64"}}"#, #"{"a": {"type": "NOPE", "value": 1}}"#,
                      #"{"a": {"type": "INT64", "value": "x"}}"#])
    func malformedStoredFieldsAreRefused(json: String) {
        #expect(throws: FieldValueError.self) { try Record.fields(fromStored: Fixture.json(json)) }
    }

    @Test func theQuickSizeCheckAgreesWithTheExactSizeAtEveryLimitNearIt() {
        let samples: [[String: FieldValue]] = [
            [:], Self.fields, ["a": .string("é\u{1}\"")], ["n": .int64(.min), "d": .double(-1.7976931348623157e308)],
            ["l": .list(elementType: .timestamp, (0..<50).map { FieldValue.timestamp(Int64($0) * 1_000_000_000_000) })],
            ["e": .encrypted("QUJDRA=="), "b": .bytes([UInt8](repeating: 1, count: 100))],
        ]
        for fields in samples {
            let exact = Record.storedSize(fields)
            for limit in [0, exact - 1, exact, exact + 1, exact * 10] {
                #expect(Record.storedSize(fields, fitsIn: limit) == (exact <= limit), "\(fields) limit \(limit) exact \(exact)")
            }
        }
    }

    @Test func storedSizeIsTheByteCountOfTheStoredJSON() {
        #expect(Record.storedSize([:]) == 2)
        #expect(Record.storedSize(["a": .string("é")]) == #"{"a":{"type":"STRING","value":"é"}}"#.utf8.count)
        // BYTES count their decoded bytes: "blob" is 2 bytes, stored as the 4 characters "AP8=".
        #expect(Record.storedSize(Self.fields) == Record.storedFields(Self.fields).serialized().count - 2)
        #expect(Record.storedSize(["b": .list(elementType: .bytes, [.bytes([1]), .bytes([1, 2, 3, 4])])])
            == #"{"b":{"type":"BYTES_LIST","value":["",""]}}"#.utf8.count + 5)
    }

    @Test func changeTagsAreTheSequenceInBase36() {
        #expect(ChangeTag.make(sequence: 0) == "0")
        #expect(ChangeTag.make(sequence: 35) == "z")
        #expect(ChangeTag.make(sequence: 36) == "10")
        #expect(ChangeTag.make(sequence: 101) != ChangeTag.make(sequence: 102))
    }
}
