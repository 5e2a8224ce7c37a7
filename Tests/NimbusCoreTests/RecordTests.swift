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

    /// The one writer's bytes for `record` (`RecordWire` through `Record.writeJSON`).
    static func written(_ record: Record, desiredKeys: Set<String>? = nil, downloadURL: ((AssetValue) -> String)? = nil) -> [UInt8] {
        var writer = JSONPageWriter()
        record.writeJSON(desiredKeys: desiredKeys, downloadURL: downloadURL, to: &writer)
        return writer.finish()
    }

    /// The record dictionary of API.md § Records built member by member as a JSON tree, apart
    /// from the writer: what the writer's bytes must be (serialized in this member order).
    static func expectedTree(_ record: Record, desiredKeys: Set<String>? = nil) -> JSONValue {
        var fields = JSONObject()
        for name in record.fields.keys.sorted() where desiredKeys?.contains(name) ?? true {
            if let value = record.fields[name] { fields[name] = ["value": value.json, "type": .string(value.type.name)] }
        }
        func stamp(_ stamp: RecordStamp) -> JSONValue {
            ["timestamp": .integer(stamp.timestamp), "userRecordName": .string(stamp.userRecordName), "deviceID": .string(stamp.deviceID)]
        }
        return ["recordName": .string(record.recordName), "recordType": .string(record.recordType), "recordChangeTag": .string(record.changeTag),
                "fields": .object(fields), "created": stamp(record.created), "modified": stamp(record.modified), "deleted": false,
                "zoneID": ["zoneName": .string(record.zoneName)]]
    }

    @Test func theRecordDictionaryHasTheAPIShape() throws {
        let json = try JSONValue.parse(Self.written(record))
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

    @Test func theWriterWritesTheTreesBytes() {
        var escaped = record
        escaped.recordName = "quote\"back\\slash\u{1}é"
        escaped.fields["ünïcode \"key\""] = .string("line\nbreak")
        for candidate in [record, escaped] {
            var bytes: [UInt8] = Array("prefix".utf8)
            candidate.writeJSON(to: &bytes)
            #expect(bytes == Array("prefix".utf8) + Self.expectedTree(candidate).serialized(), "\(candidate.recordName)")
            // The fields' wire form kept since it was written is the one sent.
            #expect(Self.written(candidate.withWireFields().record) == Self.expectedTree(candidate).serialized())
        }
    }

    @Test func theBytesAreTheOnesAPIDotMdShows() {
        let small = Record(recordName: "evt-1", recordType: "Event", fields: ["n": .int64(3), "a": .string("x\"y")], changeTag: "3k",
                           created: RecordStamp(timestamp: 1, userRecordName: "_u1", deviceID: "mac"),
                           modified: RecordStamp(timestamp: 2, userRecordName: "_u1", deviceID: "phone"), zoneName: "Z")
        #expect(String(decoding: Self.written(small), as: UTF8.self) == #"{"recordName":"evt-1","recordType":"Event","recordChangeTag":"3k","#
            + #""fields":{"a":{"value":"x\"y","type":"STRING"},"n":{"value":3,"type":"INT64"}},"#
            + #""created":{"timestamp":1,"userRecordName":"_u1","deviceID":"mac"},"modified":{"timestamp":2,"userRecordName":"_u1","deviceID":"phone"},"#
            + #""deleted":false,"zoneID":{"zoneName":"Z"}}"#)
        var writer = JSONPageWriter()
        RecordWire.writeTombstone(name: "gone \"1\"", type: nil, to: &writer)
        #expect(String(decoding: writer.finish(), as: UTF8.self) == #"{"recordName":"gone \"1\"","deleted":true}"#)
    }

    @Test func assetsGetTheirDownloadURLAndDesiredKeysApplyToThem() throws {
        let url: (AssetValue) -> String = { "https://h/a/\($0.fileChecksum)" }
        let json = try JSONValue.parse(Self.written(record, downloadURL: url))
        #expect(json["fields"]?["photo"]?["value"]?["downloadURL"] == "https://h/a/c2hh")
        #expect(Self.written(record, downloadURL: url) == Self.expectedTree(record.withDownloadURLs(url)).serialized())
        #expect(Self.written(record, desiredKeys: ["photo", "count"], downloadURL: url)
                == Self.expectedTree(record.withDownloadURLs(url), desiredKeys: ["photo", "count"]).serialized())
        // Without a URL to add (the export), the asset goes as it is stored.
        #expect(try JSONValue.parse(Self.written(record))["fields"]?["photo"]?["value"]?["downloadURL"] == nil)
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
        #expect(bytes == Self.expectedTree(candidate).serialized())
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

    @Test func desiredKeysLimitTheFieldsButNotTheSystemMembers() throws {
        let json = try JSONValue.parse(Self.written(record, desiredKeys: ["title", "nonexistent"]))
        #expect(json["fields"]?.objectValue?.keys == ["title"])
        #expect(json["recordChangeTag"] == "3k1x9")
        #expect(try JSONValue.parse(Self.written(record, desiredKeys: []))["fields"] == .object([:]))
        #expect(Self.written(record, desiredKeys: ["title", "tags"]) == Self.expectedTree(record, desiredKeys: ["title", "tags"]).serialized())
    }

    @Test func aDeletedRecordIsWrittenAsItsShortTombstone() {
        var deleted = record
        deleted.deleted = true
        #expect(String(decoding: Self.written(deleted), as: UTF8.self) == #"{"recordName":"evt-1","recordType":"BlockedAppEvent","deleted":true}"#)
        #expect(Self.written(deleted, desiredKeys: ["title"], downloadURL: { _ in "u" }) == Self.written(deleted))
    }

    @Test func storedFieldsReadBackToTheSameValues() throws {
        let stored = Record.storage(of: Self.fields)
        #expect(!stored.isWireForm, "an asset is stored without its download URL")
        #expect(try Record.fields(fromStored: JSONValue.parse(Array(stored.text.utf8))) == Self.fields)
    }

    @Test func storedFieldsAreTheWireFormSortedAndTyped() {
        let stored = Record.storage(of: ["b": .int64(1), "a": .string("x")])
        #expect(stored.isWireForm)
        #expect(stored.text == #"{"a":{"value":"x","type":"STRING"},"b":{"value":1,"type":"INT64"}}"#)
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
        #expect(Record.storedSize(Self.fields) == Record.storage(of: Self.fields).text.utf8.count - 2)
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
