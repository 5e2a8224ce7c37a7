import NimbusSupport
@testable import NimbusCore
import Testing

/// Field types and wire values (docs/api.md Records: field types).
@Suite struct FieldValueTests {
    func decode(_ json: String, as typeName: String) -> Result<FieldValue, FieldValueError> {
        guard let type = FieldType(name: typeName) else { fatalError("no type \(typeName)") }
        return Result { () throws(FieldValueError) -> FieldValue in try FieldValue.decode(Fixture.json(json), as: type) }
    }

    func given(_ json: String, as typeName: String) -> String? {
        if case .failure(let error) = decode(json, as: typeName) { return error.given }
        return nil
    }

    // MARK: FieldType names

    @Test func everyBaseTypeAndItsListFormParseByName() {
        for base in FieldType.Base.allCases {
            #expect(FieldType(name: base.rawValue) == FieldType(base))
            #expect(FieldType(name: base.rawValue + "_LIST") == FieldType(base, isList: true))
            #expect(FieldType(base, isList: true).name == base.rawValue + "_LIST")
            #expect(FieldType(base, isList: true).element == FieldType(base))
        }
    }

    @Test func encryptedBytesParsesByNameAndHasNoListForm() {
        #expect(FieldType(name: "ENCRYPTED_BYTES") == .encryptedBytes)
        #expect(FieldType.encryptedBytes.name == "ENCRYPTED_BYTES" && FieldType.encryptedBytes.schemaName == "BYTES (encrypted)")
        #expect(FieldType(name: "ENCRYPTED_BYTES_LIST") == nil)
        #expect(FieldType(.string, isList: true, isEncrypted: true).wireType == .encryptedBytes)
    }

    @Test(arguments: ["", "string", "LIST", "_LIST", "STRING_LIST_LIST", "INT32", "STRING ", "REFERENCE_list"])
    func otherTypeNamesAreNotTypes(name: String) {
        #expect(FieldType(name: name) == nil)
    }

    // MARK: decoding each type

    @Test func stringDecodesOnlyFromAString() throws {
        #expect(try decode(#""hé""#, as: "STRING").get() == .string("hé"))
        #expect(given("1", as: "STRING") == "an integer")
        #expect(given("null", as: "STRING") == "null")
    }

    @Test func int64TakesIntegersAndRefusesFractionsAndStrings() throws {
        #expect(try decode("9223372036854775807", as: "INT64").get() == .int64(.max))
        #expect(try decode("-1", as: "INT64").get() == .int64(-1))
        #expect(given("1.5", as: "INT64") == "a number with a fraction")
        #expect(given("1.0", as: "INT64") == "a number with a fraction")
        #expect(given(#""1""#, as: "INT64") == "a string")
    }

    @Test func doubleTakesFractionsAndIntegers() throws {
        #expect(try decode("1.5", as: "DOUBLE").get() == .double(1.5))
        #expect(try decode("3", as: "DOUBLE").get() == .double(3))
        #expect(given("true", as: "DOUBLE") == "a boolean")
    }

    @Test func timestampTakesIntegerMilliseconds() throws {
        #expect(try decode("1795000000000", as: "TIMESTAMP").get() == .timestamp(1_795_000_000_000))
        #expect(given(#""2026-01-01""#, as: "TIMESTAMP") == "a string")
        #expect(given("1e300", as: "TIMESTAMP") != nil)
    }

    @Test func bytesDecodeFromStandardBase64() throws {
        #expect(try decode(#""AAEC/w==""#, as: "BYTES").get() == .bytes([0, 1, 2, 255]))
        #expect(try decode(#""""#, as: "BYTES").get() == .bytes([]))
        #expect(given(#""not base64!""#, as: "BYTES") == "a string that is not base64")
        #expect(given("[1, 2]", as: "BYTES") == "an array")
    }

    @Test func aReferenceDefaultsToActionNoneInItsOwnZone() throws {
        #expect(try decode(#"{"recordName": "r1"}"#, as: "REFERENCE").get() == .reference(RecordReference(recordName: "r1")))
        #expect(try decode(#"{"recordName": "r1", "action": null, "zoneID": null}"#, as: "REFERENCE").get()
                == .reference(RecordReference(recordName: "r1", zoneName: nil, action: .none)))
    }

    @Test func aReferenceKeepsItsZoneAndDeleteSelfAction() {
        let value = try? decode(#"{"recordName": "r1", "zoneID": {"zoneName": "Z"}, "action": "DELETE_SELF"}"#, as: "REFERENCE").get()
        #expect(value == .reference(RecordReference(recordName: "r1", zoneName: "Z", action: .deleteSelf)))
    }

    @Test(arguments: [
        #"{"recordName": "r1", "action": "CASCADE"}"#,
        #"{"recordName": "r1", "action": "delete_self"}"#,
        #"{"recordName": "r1", "action": 1}"#,
        #"{"recordName": 5}"#,
        #"{"zoneID": {"zoneName": "Z"}}"#,
        #"{"recordName": "r1", "zoneID": {}}"#,
        #"{"recordName": "r1", "zoneID": "Z"}"#,
        #""r1""#,
    ])
    func malformedReferencesAreRefused(json: String) {
        #expect(given(json, as: "REFERENCE") != nil)
    }

    @Test func anAssetNeedsChecksumAndANonNegativeSize() throws {
        #expect(try decode(#"{"fileChecksum": "c", "size": 3, "receipt": "r"}"#, as: "ASSETID").get()
                == .asset(AssetValue(fileChecksum: "c", size: 3, receipt: "r")))
        #expect(given(#"{"fileChecksum": "c", "size": -1}"#, as: "ASSETID") != nil)
        #expect(given(#"{"fileChecksum": "c"}"#, as: "ASSETID") != nil)
        #expect(given(#"{"size": 1}"#, as: "ASSETID") != nil)
    }

    @Test func listsDecodeEachElementAsTheElementType() throws {
        #expect(try decode(#"["a", "b"]"#, as: "STRING_LIST").get() == .list(elementType: .string, [.string("a"), .string("b")]))
        #expect(try decode("[1, 2.5]", as: "DOUBLE_LIST").get() == .list(elementType: .double, [.double(1), .double(2.5)]))
        #expect(try decode("[]", as: "INT64_LIST").get() == .list(elementType: .int64, []))
        #expect(given(#"[1, "b"]"#, as: "INT64_LIST") == "a string")
        #expect(given(#""a""#, as: "STRING_LIST") == "a string")
        #expect(given("[[1]]", as: "INT64_LIST") == "an array")
    }

    // MARK: type, references, json

    @Test func aValueKnowsItsType() {
        #expect(FieldValue.string("").type == .string)
        #expect(FieldValue.timestamp(0).type == .timestamp)
        #expect(FieldValue.asset(AssetValue(fileChecksum: "c", size: 0)).type == .assetID)
        #expect(FieldValue.list(elementType: .reference, []).type == FieldType(.reference, isList: true))
    }

    @Test func referencesAreFoundInReferencesAndReferenceLists() {
        let a = RecordReference(recordName: "a"), b = RecordReference(recordName: "b", action: .deleteSelf)
        #expect(FieldValue.reference(a).references == [a])
        #expect(FieldValue.list(elementType: .reference, [.reference(a), .reference(b)]).references == [a, b])
        #expect(FieldValue.string("a").references.isEmpty)
    }

    static let samples: [FieldValue] = [
        .string("Safari ✓"), .int64(-42), .double(0.25), .timestamp(1_795_000_000_000), .bytes([0, 1, 254, 255]),
        .reference(RecordReference(recordName: "r1")),
        .reference(RecordReference(recordName: "r1", zoneName: "Z", action: .deleteSelf)),
        .asset(AssetValue(fileChecksum: "c2hh", size: 12, receipt: "rcpt")),
        .list(elementType: .string, [.string("a"), .string("b")]),
        .list(elementType: .timestamp, [.timestamp(1), .timestamp(2)]),
        .list(elementType: .bytes, [.bytes([1]), .bytes([])]),
        .list(elementType: .reference, [.reference(RecordReference(recordName: "x", action: .deleteSelf))]),
        .list(elementType: .double, []),
    ]

    @Test(arguments: samples)
    func everyValueSurvivesItsWireForm(value: FieldValue) throws {
        #expect(try FieldValue.decode(value.json, as: value.type) == value)
    }

    @Test func wireFormsAreThoseOfTheAPI() {
        #expect(FieldValue.timestamp(5).json == .integer(5))
        #expect(FieldValue.bytes([0, 1, 2, 255]).json == .string("AAEC/w=="))
        #expect(FieldValue.reference(RecordReference(recordName: "r", zoneName: "Z", action: .deleteSelf)).json
                == Fixture.json(#"{"recordName": "r", "action": "DELETE_SELF", "zoneID": {"zoneName": "Z"}}"#))
        #expect(FieldValue.reference(RecordReference(recordName: "r")).json == Fixture.json(#"{"recordName": "r", "action": "NONE"}"#))
    }

    // MARK: inference

    @Test func inferenceFollowsTheAPIRules() {
        #expect(FieldValue.inferType(.string("a")) == .string)
        #expect(FieldValue.inferType(.integer(1)) == .int64)
        #expect(FieldValue.inferType(.double(1)) == .double)
        #expect(FieldValue.inferType(Fixture.json("[1, 2.5, 3]")) == FieldType(.double, isList: true))
        #expect(FieldValue.inferType(Fixture.json("[1, 2]")) == FieldType(.int64, isList: true))
        #expect(FieldValue.inferType(Fixture.json(#"["a"]"#)) == FieldType(.string, isList: true))
        for text in ["[]", "null", "true", "{}", "[null]", #"["a", 1]"#, #"[1.5, "a"]"#, "[[1]]", "[{}]"] {
            #expect(FieldValue.inferType(Fixture.json(text)) == nil, "\(text)")
        }
    }

    @Test func hasAssetsSaysWhetherThereAreAssetsForEveryKindOfValue() {
        let asset = FieldValue.asset(AssetValue(fileChecksum: "c", size: 1))
        let values: [FieldValue] = [
            .string("a"), .int64(1), .double(1), .timestamp(1), .bytes([1]), .reference(RecordReference(recordName: "r")), asset,
            .list(elementType: .assetID, []), .list(elementType: .assetID, [asset]), .list(elementType: .string, [.string("a")]),
            .list(elementType: .reference, [.reference(RecordReference(recordName: "r"))]),
        ]
        for value in values {
            #expect(value.hasAssets == !value.assets.isEmpty, "\(value)")
        }
    }
}
