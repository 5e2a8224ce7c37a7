@testable import NimbusCore
import Testing

/// Parsing one element of `records/modify` `operations`: a malformed one is a BAD_REQUEST item (docs/api.md Details).
@Suite struct RecordOperationTests {
    func parsed(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> RecordOperation? {
        let result = Fixture.operation(text)
        #expect(result.itemError == nil, "\(String(describing: result.itemError))", sourceLocation: sourceLocation)
        return try? result.get()
    }

    func refusal(_ text: String) -> ItemError? {
        Fixture.operation(text).itemError
    }

    @Test func aFullCreateParsesEveryPart() {
        let operation = parsed(#"""
            {"operationType": "create", "desiredKeys": ["title"],
             "record": {"recordName": "n-1", "recordType": "Note", "recordChangeTag": "x",
                        "fields": {"title": {"value": "t", "type": "STRING"}, "gone": {"value": null}, "n": {"value": 1}}}}
            """#)
        #expect(operation == RecordOperation(kind: .create, recordName: "n-1", recordType: "Note", changeTag: "x", fields: [
            RawField(name: "title", value: "t", declaredType: "STRING"),
            RawField(name: "gone", value: .null),
            RawField(name: "n", value: 1),
        ], desiredKeys: ["title"]))
    }

    @Test(arguments: RecordOperation.Kind.allCases)
    func everyOperationTypeParsesWithAllItNeeds(kind: RecordOperation.Kind) {
        let operation = parsed(modifyOperation(kind.rawValue, "r1", tag: "t1"))
        #expect(operation?.kind == kind)
        #expect(operation?.recordName == "r1")
        #expect(operation?.changeTag == "t1")
    }

    @Test(arguments: [#"{"recordName": "", "recordType": "Note"}"#, #"{"recordName": null, "recordType": "Note"}"#,
                      #"{"recordType": "Note"}"#])
    func createMayLeaveTheNameToTheServer(record: String) {
        #expect(parsed(#"{"operationType": "create", "record": \#(record)}"#)?.recordName == "")
    }

    @Test(arguments: ["update", "forceUpdate", "replace", "forceReplace", "delete", "forceDelete"])
    func everyOtherOperationNeedsARecordName(kind: String) {
        let error = refusal(#"{"operationType": "\#(kind)", "record": {"recordName": "", "recordType": "Note", "recordChangeTag": "t"}}"#)
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("recordName") == true)
    }

    // MARK: malformed shapes

    @Test(arguments: [#""op""#, "[]", "null", "1"])
    func anOperationThatIsNotAnObjectIsRefused(json: String) {
        let error = refusal(json)
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == nil)
    }

    @Test(arguments: [#""#, #""operationType": null,"#, #""operationType": 1,"#])
    func aMissingOperationTypeIsRefusedWithTheRecordName(member: String) {
        let error = refusal(#"{\#(member) "record": {"recordName": "r1", "recordType": "Note"}}"#)
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == "r1")
        #expect(error?.reason.contains("operationType") == true)
    }

    @Test(arguments: ["Create", "upsert", "", "modify"])
    func anUnknownOperationTypeIsRefusedListingTheKnownOnes(kind: String) {
        let error = refusal(#"{"operationType": "\#(kind)", "record": {"recordName": "r1"}}"#)
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == "r1")
        #expect(error?.reason.contains("forceReplace") == true)
    }

    @Test(arguments: [#""#, #", "record": "r1""#, #", "record": ["r1"]"#, #", "record": null"#])
    func anOperationWithoutARecordObjectIsRefused(member: String) {
        let error = refusal(#"{"operationType": "create"\#(member)}"#)
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("record") == true)
    }

    @Test(arguments: ["5", "true", #"["a"]"#, #"{"n": "a"}"#])
    func aRecordNameThatIsNotAStringIsRefused(name: String) {
        #expect(refusal(#"{"operationType": "create", "record": {"recordName": \#(name), "recordType": "Note"}}"#)?.code == .badRequest)
    }

    @Test(arguments: ["a b", "a/b", "é", "a!", String(repeating: "n", count: 256)])
    func anInvalidRecordNameIsRefusedCarryingIt(name: String) {
        let error = refusal(modifyOperation("forceUpdate", name))
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == name)
    }

    @Test func aRecordNameOf255CharactersIsAccepted() {
        let name = String(repeating: "n", count: 255)
        #expect(parsed(modifyOperation("forceUpdate", name))?.recordName == name)
    }

    @Test(arguments: ["create", "forceUpdate", "forceReplace"])
    func operationsThatMayCreateNeedARecordType(kind: String) {
        for record in [#"{"recordName": "r1"}"#, #"{"recordName": "r1", "recordType": null}"#] {
            let error = refusal(#"{"operationType": "\#(kind)", "record": \#(record)}"#)
            #expect(error?.code == .badRequest)
            #expect(error?.recordName == "r1")
            #expect(error?.reason.contains("recordType") == true)
        }
    }

    @Test(arguments: ["update", "replace", "delete", "forceDelete"])
    func operationsOnAnExistingRecordMayOmitTheRecordType(kind: String) {
        let operation = parsed(modifyOperation(kind, "r1", type: nil, tag: "t1"))
        #expect(operation?.recordType == nil)
    }

    @Test(arguments: [#""1Note""#, #""_Note""#, #""No-te""#, #""""#, "5", #"["Note"]"#])
    func anInvalidRecordTypeIsRefused(type: String) {
        let error = refusal(#"{"operationType": "update", "record": {"recordName": "r1", "recordType": \#(type), "recordChangeTag": "t"}}"#)
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == "r1")
    }

    @Test(arguments: ["5", "true", #"["t"]"#, #"{"tag": "t"}"#])
    func aChangeTagThatIsNotAStringIsRefused(tag: String) {
        let error = refusal(#"{"operationType": "forceUpdate", "record": {"recordName": "r1", "recordType": "Note", "recordChangeTag": \#(tag)}}"#)
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == "r1")
        #expect(error?.reason.contains("recordChangeTag") == true)
    }

    @Test(arguments: ["update", "replace", "delete"])
    func tagCheckedOperationsWithoutATagAreRefused(kind: String) {
        for record in [#"{"recordName": "r1"}"#, #"{"recordName": "r1", "recordChangeTag": null}"#] {
            let error = refusal(#"{"operationType": "\#(kind)", "record": \#(record)}"#)
            #expect(error?.code == .badRequest)
            #expect(error?.recordName == "r1")
            #expect(error?.reason.contains("recordChangeTag") == true)
        }
    }

    @Test(arguments: ["forceUpdate", "forceReplace", "forceDelete"])
    func forceOperationsNeedNoTag(kind: String) {
        #expect(parsed(modifyOperation(kind, "r1"))?.changeTag == nil)
    }

    // MARK: fields

    @Test(arguments: ["bad-name", "_x", "1x", "x y", "é", String(repeating: "f", count: 256)])
    func anInvalidFieldNameIsRefused(name: String) {
        let error = refusal(modifyOperation("forceUpdate", "r1", fields: #"{"\#(name)": {"value": 1}}"#))
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == "r1")
    }

    @Test(arguments: [#""x""#, "1", "null", #"["x"]"#])
    func aFieldThatIsNotAnObjectIsRefused(entry: String) {
        let error = refusal(modifyOperation("forceUpdate", "r1", fields: #"{"title": \#(entry)}"#))
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == "r1")
        #expect(error?.reason.contains("title") == true)
    }

    @Test func aFieldWithoutValueIsRefusedPointingAtNullForRemoval() {
        let error = refusal(modifyOperation("forceUpdate", "r1", fields: #"{"title": {"type": "STRING"}}"#))
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("null") == true)
    }

    @Test(arguments: ["1", "true", #"["STRING"]"#, #"{"name": "STRING"}"#])
    func aFieldTypeThatIsNotAStringIsRefused(type: String) {
        let error = refusal(modifyOperation("forceUpdate", "r1", fields: #"{"title": {"value": "x", "type": \#(type)}}"#))
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == "r1")
    }

    @Test func aNullFieldTypeMeansNoDeclaredType() {
        let operation = parsed(modifyOperation("forceUpdate", "r1", fields: #"{"title": {"value": "x", "type": null}}"#))
        #expect(operation?.fields == [RawField(name: "title", value: "x")])
    }

    @Test(arguments: [#""x""#, "[]", "1"])
    func fieldsThatAreNotAnObjectAreRefused(fields: String) {
        #expect(refusal(modifyOperation("forceUpdate", "r1", fields: fields))?.code == .badRequest)
    }

    @Test func fieldsKeepTheirDocumentOrder() {
        let operation = parsed(modifyOperation("forceUpdate", "r1", fields: #"{"z": {"value": 1}, "a": {"value": 2}, "m": {"value": 3}}"#))
        #expect(operation?.fields.map(\.name) == ["z", "a", "m"])
    }

    @Test func deletesIgnoreFields() {
        let operation = parsed(modifyOperation("delete", "r1", tag: "t", fields: #"{"bad-name": 5}"#))
        #expect(operation?.fields == [])
    }

    // MARK: desiredKeys

    @Test func desiredKeysAreASetOfNames() {
        #expect(parsed(modifyOperation("forceDelete", "r1", desiredKeys: #"["a", "b", "a"]"#))?.desiredKeys == ["a", "b"])
        #expect(parsed(modifyOperation("forceDelete", "r1", desiredKeys: "[]"))?.desiredKeys == [])
        #expect(parsed(modifyOperation("forceDelete", "r1", desiredKeys: "null"))?.desiredKeys == nil)
        #expect(parsed(modifyOperation("forceDelete", "r1"))?.desiredKeys == nil)
    }

    @Test(arguments: [#""a""#, #"["a", 1]"#, #"{"a": true}"#, "true", "[null]"])
    func malformedDesiredKeysAreRefused(keys: String) {
        let error = refusal(modifyOperation("forceDelete", "r1", desiredKeys: keys))
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == "r1")
        #expect(error?.reason.contains("desiredKeys") == true)
    }
}
