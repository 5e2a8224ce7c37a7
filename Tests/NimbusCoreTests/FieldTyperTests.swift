import NimbusSupport
@testable import NimbusCore
import Testing

/// Typing an operation's fields against the schema: just in time in development, deployed types only in production.
@Suite struct FieldTyperTests {
    let note = RecordTypeSchema(name: "Note", fields: ["title": .string, "count": .int64, "when": .timestamp, "ratio": .double,
                                                       "photo": .assetID])

    func type(_ fields: String, environment: Environment = .development, schema: RecordTypeSchema?) -> Result<FieldTyper.Typed, ItemError> {
        guard case .object(let object) = Fixture.json(fields) else { fatalError("fields must be an object") }
        let raw = object.map { member in
            RawField(name: member.key, value: member.value["value"] ?? .null, declaredType: member.value["type"]?.stringValue)
        }
        return FieldTyper(environment: environment).type(raw, recordName: "rec-1", recordType: "Note", schema: schema)
    }

    func typed(_ fields: String, environment: Environment = .development, schema: RecordTypeSchema? = nil,
               sourceLocation: SourceLocation = #_sourceLocation) -> FieldTyper.Typed? {
        let result = type(fields, environment: environment, schema: schema)
        #expect(result.itemError == nil, "\(String(describing: result.itemError))", sourceLocation: sourceLocation)
        return try? result.get()
    }

    // MARK: development inference

    @Test(arguments: [
        (#""Safari""#, FieldType.string, FieldValue.string("Safari")),
        ("42", .int64, .int64(42)),
        ("-7", .int64, .int64(-7)),
        ("1.5", .double, .double(1.5)),
        ("1e3", .double, .double(1000)),
        (#"["a", "b"]"#, FieldType(.string, isList: true), .list(elementType: .string, [.string("a"), .string("b")])),
        ("[1, 2]", FieldType(.int64, isList: true), .list(elementType: .int64, [.int64(1), .int64(2)])),
        ("[0.5, 2.5]", FieldType(.double, isList: true), .list(elementType: .double, [.double(0.5), .double(2.5)])),
        ("[1, 2.5]", FieldType(.double, isList: true), .list(elementType: .double, [.double(1), .double(2.5)])),
        ("[2.5, 1]", FieldType(.double, isList: true), .list(elementType: .double, [.double(2.5), .double(1)])),
    ])
    func developmentInfersTheTypeOfAnUntypedNewField(json: String, expectedType: FieldType, expectedValue: FieldValue) {
        let result = typed(#"{"f": {"value": \#(json)}}"#)
        #expect(result?.newFields == ["f": expectedType])
        #expect(result?.changes == ["f": expectedValue])
        #expect(result?.isNewType == true)
    }

    @Test(arguments: ["[]", "{}", #"{"recordName": "x"}"#, "true", "[null]", #"["a", 1]"#, "[[1]]", "[true]", #"[1, "a"]"#])
    func developmentRefusesValuesWhoseTypeCannotBeInferred(json: String) {
        let error = type(#"{"f": {"value": \#(json)}}"#, schema: note).itemError
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == "rec-1")
        #expect(error?.reason.contains("type") == true)
    }

    @Test func onlyFieldsUnknownToTheSchemaAreNewAndAKnownTypeIsNotNew() {
        let result = typed(#"{"title": {"value": "t"}, "extra": {"value": 3}}"#, schema: note)
        #expect(result?.newFields == ["extra": .int64])
        #expect(result?.isNewType == false)
    }

    @Test func anUnknownTypeIsNewEvenWithoutFields() {
        let result = typed("{}")
        #expect(result?.isNewType == true)
        #expect(result?.newFields == [:])
    }

    @Test func aNullValueRemovesTheFieldAndTeachesTheSchemaNothing() {
        let result = typed(#"{"title": {"value": null}, "other": {"value": null}}"#, schema: note)
        #expect(result?.changes == ["title": FieldValue?.none, "other": FieldValue?.none])
        #expect(result?.newFields == [:])
    }

    @Test func aDeclaredTypeWinsOverInference() {
        let result = typed(#"{"at": {"value": 1700000000000, "type": "TIMESTAMP"}, "d": {"value": 2, "type": "DOUBLE"}}"#)
        #expect(result?.newFields == ["at": .timestamp, "d": .double])
        #expect(result?.changes == ["at": .timestamp(1_700_000_000_000), "d": .double(2)])
    }

    @Test func anEmptyListIsAcceptedWithADeclaredType() {
        let result = typed(#"{"tags": {"value": [], "type": "STRING_LIST"}}"#)
        #expect(result?.changes == ["tags": .list(elementType: .string, [])])
        #expect(result?.newFields == ["tags": FieldType(.string, isList: true)])
    }

    @Test func anUntypedKnownFieldTakesTheSchemaType() {
        let result = typed(#"{"when": {"value": 5}, "ratio": {"value": 2}}"#, schema: note)
        #expect(result?.changes == ["when": .timestamp(5), "ratio": .double(2)])
        #expect(result?.newFields == [:])
    }

    @Test func aDeclaredTypeThatMatchesTheSchemaIsAccepted() {
        #expect(typed(#"{"count": {"value": 5, "type": "INT64"}}"#, schema: note)?.changes == ["count": .int64(5)])
    }

    @Test func aDeclaredTypeOtherThanTheSchemaTypeIsBadRequestNamingRecordFieldAndBothTypes() {
        let error = type(#"{"count": {"value": "5", "type": "STRING"}}"#, schema: note).itemError
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == "rec-1")
        for part in ["rec-1", "count", "INT64", "STRING", "Note"] {
            #expect(error?.reason.contains(part) == true, "reason lacks \(part): \(error?.reason ?? "")")
        }
    }

    @Test(arguments: ["TEXT", "string", "LIST", "STRING_LIST_LIST", ""])
    func anUnknownDeclaredTypeIsBadRequest(name: String) {
        let error = type(#"{"f": {"value": "x", "type": "\#(name)"}}"#, schema: note).itemError
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains(Names.quoted(name)) == true)
    }

    @Test(arguments: [
        #"{"count": {"value": "five"}}"#,
        #"{"count": {"value": 1.5}}"#,
        #"{"title": {"value": 7}}"#,
        #"{"when": {"value": "yesterday"}}"#,
    ])
    func aValueThatDoesNotFitItsTypeIsBadRequestSayingWhatWasExpected(fields: String) {
        let error = type(fields, schema: note).itemError
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("expects") == true)
    }

    // MARK: ASSETID (not available yet)

    @Test(arguments: [
        #"{"photo": {"value": {"fileChecksum": "abc", "size": 3, "receipt": "r"}}}"#,
        #"{"newAsset": {"value": {"fileChecksum": "abc", "size": 3}, "type": "ASSETID"}}"#,
        #"{"assets": {"value": [{"fileChecksum": "abc", "size": 3}], "type": "ASSETID_LIST"}}"#,
    ])
    func assetValuesAreRefusedWithAClearMessage(fields: String) {
        let error = type(fields, schema: note).itemError
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("ASSETID") == true)
        #expect(error?.reason.contains("not available") == true)
    }

    // MARK: production

    @Test func productionAcceptsDeployedTypesAndFields() {
        let result = typed(#"{"title": {"value": "t"}, "count": {"value": 2, "type": "INT64"}}"#, environment: .production, schema: note)
        #expect(result?.changes == ["title": .string("t"), "count": .int64(2)])
        #expect(result?.newFields == [:])
        #expect(result?.isNewType == false)
    }

    @Test func productionRefusesAnUndeployedType() {
        let error = type(#"{"title": {"value": "t"}}"#, environment: .production, schema: nil).itemError
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("Note") == true)
        #expect(error?.reason.contains("production") == true)
    }

    @Test(arguments: [#"{"extra": {"value": "t"}}"#, #"{"extra": {"value": "t", "type": "STRING"}}"#])
    func productionRefusesAnUndeployedField(fields: String) {
        let error = type(fields, environment: .production, schema: note).itemError
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == "rec-1")
        #expect(error?.reason.contains("extra") == true)
    }
}
