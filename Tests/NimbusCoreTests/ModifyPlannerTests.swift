@testable import NimbusCore
import Testing

/// The JSON text of one `records/modify` operation.
func modifyOperation(_ kind: String, _ name: String, type: String? = "Note", tag: String? = nil, fields: String = "{}",
                     desiredKeys: String? = nil) -> String {
    var record = #"{"recordName": "\#(name)", "fields": \#(fields)"#
    if let type { record += #", "recordType": "\#(type)""# }
    if let tag { record += #", "recordChangeTag": "\#(tag)""# }
    record += "}"
    var operation = #"{"operationType": "\#(kind)", "record": \#(record)"#
    if let desiredKeys { operation += #", "desiredKeys": \#(desiredKeys)"# }
    return operation + "}"
}

/// Every operation type against a missing, a live and a tombstoned record (docs/api.md records/modify and Details).
@Suite struct ModifyPlannerTests {
    let live = Fixture.record("r1")
    let tombstone = Fixture.record("r1", tag: "t0", deleted: true)
    let nextTag = ChangeTag.make(sequence: Fixture.baseSequence + 1)

    func saved(_ name: String, _ fields: [String: FieldValue], type: String = "Note", created: RecordStamp = Fixture.contextStamp,
               sequence: Int64 = Fixture.baseSequence + 1) -> Record {
        Record(recordName: name, recordType: type, fields: fields, changeTag: ChangeTag.make(sequence: sequence),
               created: created, modified: Fixture.contextStamp, deleted: false, zoneName: Fixture.zone)
    }

    func expectNoWrites(_ plan: ModifyPlan, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(plan.writes.isEmpty, sourceLocation: sourceLocation)
        #expect(plan.lastSequence == Fixture.baseSequence, sourceLocation: sourceLocation)
        #expect(plan.deletedNames.isEmpty, sourceLocation: sourceLocation)
    }

    // MARK: create

    @Test func createOfANewRecordSavesItWithTheNextSequenceAndContextStamps() {
        let plan = Fixture.plan([modifyOperation("create", "n1", fields: #"{"title": {"value": "x"}}"#)])
        let expected = saved("n1", ["title": .string("x")])
        #expect(plan.writes == [.save(expected, sequence: 101, deleteSelfTargets: [], expiresAt: nil)])
        #expect(plan.results == [.saved(expected, desiredKeys: nil)])
        #expect(plan.lastSequence == 101)
        #expect(plan.deletedNames.isEmpty)
        #expect(plan.schemaAdditions.isEmpty)
    }

    @Test func createRetryWithTheSameTypeAndFieldsAnswersTheStoredRecordWithoutWriting() {
        let fields = #"{"title": {"value": "a"}, "count": {"value": 1, "type": "INT64"}}"#
        let plan = Fixture.plan([modifyOperation("create", "r1", fields: fields, desiredKeys: #"["title"]"#)], existing: [live])
        #expect(plan.results == [.saved(live, desiredKeys: ["title"])])
        #expect(plan.results.first?.savedRecord?.changeTag == "t1")
        expectNoWrites(plan)
    }

    @Test func createRetryComparesTypedValuesSoAnIntegerMatchesAStoredDouble() {
        let stored = Fixture.record("r1", fields: ["ratio": .double(2)])
        let plan = Fixture.plan([modifyOperation("create", "r1", fields: #"{"ratio": {"value": 2}}"#)], existing: [stored])
        #expect(plan.results == [.saved(stored, desiredKeys: nil)])
        expectNoWrites(plan)
    }

    @Test(arguments: [
        #"{"title": {"value": "b"}, "count": {"value": 1}}"#,   // another value
        #"{"title": {"value": "a"}}"#,                          // a field fewer
        #"{"title": {"value": "a"}, "count": {"value": 1}, "ratio": {"value": 0.5}}"#, // a field more
    ])
    func createOverALiveRecordWithOtherContentIsExistsCarryingTheStoredRecord(fields: String) {
        let plan = Fixture.plan([modifyOperation("create", "r1", fields: fields)], existing: [live])
        let error = plan.results.first?.error
        #expect(error?.code == .exists)
        #expect(error?.recordName == "r1")
        #expect(error?.serverRecord == live)
        expectNoWrites(plan)
    }

    @Test func createOverALiveRecordOfAnotherTypeIsExists() {
        // docs/api.md: `create` is EXISTS when the record is present (and differs); only update forms change
        // content, so a create naming another type is not a "type change" BAD_REQUEST.
        let plan = Fixture.plan([modifyOperation("create", "r1", type: "Link")], existing: [live])
        #expect(plan.results.first?.error?.code == .exists)
        #expect(plan.results.first?.error?.serverRecord == live)
        expectNoWrites(plan)
    }

    @Test func createOverATombstoneCreatesAFreshRecord() {
        let plan = Fixture.plan([modifyOperation("create", "r1", fields: #"{"title": {"value": "x"}}"#)], existing: [tombstone])
        let expected = saved("r1", ["title": .string("x")])
        #expect(plan.results == [.saved(expected, desiredKeys: nil)])
        #expect(plan.writes.first?.savedRecord?.created == Fixture.contextStamp)
        #expect(plan.lastSequence == 101)
    }

    // MARK: update

    @Test func updateMergesTheGivenFieldsKeepsCreatedAndStampsModified() {
        let plan = Fixture.plan([modifyOperation("update", "r1", type: nil, tag: "t1", fields: #"{"count": {"value": 2}}"#)],
                                existing: [live])
        let expected = saved("r1", ["title": .string("a"), "count": .int64(2)], created: live.created)
        #expect(plan.results == [.saved(expected, desiredKeys: nil)])
        #expect(plan.writes == [.save(expected, sequence: 101, deleteSelfTargets: [], expiresAt: nil)])
        #expect(expected.modified != live.modified)
    }

    @Test func updateWithNullValueRemovesTheField() {
        let plan = Fixture.plan([modifyOperation("update", "r1", tag: "t1", fields: #"{"title": {"value": null}}"#)], existing: [live])
        #expect(plan.results.first?.savedRecord?.fields == ["count": .int64(1)])
    }

    @Test func updateWithAStaleTagIsConflictCarryingTheCurrentRecord() {
        let plan = Fixture.plan([modifyOperation("update", "r1", tag: "old", fields: #"{"count": {"value": 2}}"#)], existing: [live])
        let error = plan.results.first?.error
        #expect(error?.code == .conflict)
        #expect(error?.recordName == "r1")
        #expect(error?.serverRecord == live)
        expectNoWrites(plan)
    }

    @Test(arguments: ["update", "replace", "delete"])
    func tagCheckingOperationsWithoutATagAreBadRequestItems(kind: String) {
        let plan = Fixture.plan([modifyOperation(kind, "r1", fields: #"{"count": {"value": 2}}"#)], existing: [live])
        #expect(plan.results.first?.error?.code == .badRequest)
        #expect(plan.results.first?.error?.recordName == "r1")
        expectNoWrites(plan)
    }

    @Test(arguments: ["update", "replace", "delete"])
    func tagCheckingOperationsOnAMissingRecordAreNotFound(kind: String) {
        let plan = Fixture.plan([modifyOperation(kind, "r1", tag: "t1")])
        #expect(plan.results.first?.error?.code == .notFound)
        #expect(plan.results.first?.error?.recordName == "r1")
        expectNoWrites(plan)
    }

    @Test(arguments: ["update", "replace", "delete"])
    func tagCheckingOperationsOnATombstoneAreNotFound(kind: String) {
        let plan = Fixture.plan([modifyOperation(kind, "r1", tag: "t0")], existing: [tombstone])
        #expect(plan.results.first?.error?.code == .notFound)
        expectNoWrites(plan)
    }

    @Test(arguments: ["update", "forceUpdate", "replace", "forceReplace"])
    func changingTheRecordTypeIsBadRequest(kind: String) {
        let plan = Fixture.plan([modifyOperation(kind, "r1", type: "Link", tag: "t1")], existing: [live])
        let error = plan.results.first?.error
        #expect(error?.code == .badRequest)
        #expect(error?.recordName == "r1")
        #expect(error?.reason.contains("Note") == true)
        expectNoWrites(plan)
    }

    // MARK: forceUpdate

    @Test(arguments: [nil, "stale"] as [String?])
    func forceUpdateMergesWithoutCheckingTheTag(tag: String?) {
        let plan = Fixture.plan([modifyOperation("forceUpdate", "r1", tag: tag, fields: #"{"count": {"value": 3}}"#)], existing: [live])
        #expect(plan.results == [.saved(saved("r1", ["title": .string("a"), "count": .int64(3)], created: live.created), desiredKeys: nil)])
    }

    @Test func forceUpdateCreatesAMissingRecord() {
        let plan = Fixture.plan([modifyOperation("forceUpdate", "n1", fields: #"{"count": {"value": 3}}"#)])
        #expect(plan.writes == [.save(saved("n1", ["count": .int64(3)]), sequence: 101, deleteSelfTargets: [], expiresAt: nil)])
    }

    @Test func forceUpdateOverATombstoneStartsFromNoFields() {
        let plan = Fixture.plan([modifyOperation("forceUpdate", "r1", fields: #"{"count": {"value": 3}}"#)], existing: [tombstone])
        #expect(plan.results == [.saved(saved("r1", ["count": .int64(3)]), desiredKeys: nil)])
    }

    // MARK: replace / forceReplace

    @Test func replaceReplacesAllFields() {
        let plan = Fixture.plan([modifyOperation("replace", "r1", tag: "t1", fields: #"{"ratio": {"value": 0.5}}"#)], existing: [live])
        #expect(plan.results == [.saved(saved("r1", ["ratio": .double(0.5)], created: live.created), desiredKeys: nil)])
    }

    @Test func replaceWithAStaleTagIsConflict() {
        let plan = Fixture.plan([modifyOperation("replace", "r1", tag: "t0", fields: #"{"ratio": {"value": 0.5}}"#)], existing: [live])
        #expect(plan.results.first?.error?.code == .conflict)
        #expect(plan.results.first?.error?.serverRecord == live)
        expectNoWrites(plan)
    }

    @Test(arguments: [nil, "stale"] as [String?])
    func forceReplaceReplacesAllFieldsWithoutCheckingTheTag(tag: String?) {
        let plan = Fixture.plan([modifyOperation("forceReplace", "r1", tag: tag, fields: #"{"ratio": {"value": 0.5}}"#)], existing: [live])
        #expect(plan.results == [.saved(saved("r1", ["ratio": .double(0.5)], created: live.created), desiredKeys: nil)])
    }

    @Test func forceReplaceCreatesAMissingRecord() {
        let plan = Fixture.plan([modifyOperation("forceReplace", "n1", fields: #"{"title": {"value": "z"}}"#)])
        #expect(plan.results == [.saved(saved("n1", ["title": .string("z")]), desiredKeys: nil)])
        #expect(plan.lastSequence == 101)
    }

    // MARK: delete / forceDelete

    @Test func deleteWithTheCurrentTagWritesATombstone() {
        let plan = Fixture.plan([modifyOperation("delete", "r1", type: nil, tag: "t1")], existing: [live])
        #expect(plan.writes == [.delete(recordName: "r1", recordType: "Note", sequence: 101)])
        #expect(plan.results == [.deleted(recordName: "r1")])
        #expect(plan.deletedNames == ["r1"])
        #expect(plan.lastSequence == 101)
    }

    @Test func deleteWithAStaleTagIsConflictCarryingTheCurrentRecord() {
        let plan = Fixture.plan([modifyOperation("delete", "r1", type: nil, tag: "t0")], existing: [live])
        #expect(plan.results.first?.error?.code == .conflict)
        #expect(plan.results.first?.error?.serverRecord == live)
        expectNoWrites(plan)
    }

    @Test(arguments: [nil, "stale"] as [String?])
    func forceDeleteDeletesWithoutCheckingTheTag(tag: String?) {
        let plan = Fixture.plan([modifyOperation("forceDelete", "r1", type: nil, tag: tag)], existing: [live])
        #expect(plan.writes == [.delete(recordName: "r1", recordType: "Note", sequence: 101)])
        #expect(plan.results == [.deleted(recordName: "r1")])
    }

    @Test func forceDeleteOfAMissingRecordSucceedsWithoutAWrite() {
        let plan = Fixture.plan([modifyOperation("forceDelete", "ghost", type: nil)])
        #expect(plan.results == [.deleted(recordName: "ghost")])
        expectNoWrites(plan)
    }

    @Test func forceDeleteOfATombstoneSucceedsWithoutAWrite() {
        let plan = Fixture.plan([modifyOperation("forceDelete", "r1", type: nil)], existing: [tombstone])
        #expect(plan.results == [.deleted(recordName: "r1")])
        expectNoWrites(plan)
    }

    // MARK: typing through the planner

    @Test func aValueThatDoesNotFitTheSchemaTypeIsABadRequestItem() {
        let plan = Fixture.plan([modifyOperation("create", "n1", fields: #"{"count": {"value": "many"}}"#)])
        #expect(plan.results.first?.error?.code == .badRequest)
        #expect(plan.results.first?.error?.recordName == "n1")
        expectNoWrites(plan)
    }

    @Test func aMalformedOperationStaysItsOwnBadRequestItem() {
        let plan = Fixture.plan([#"{"operationType": "explode", "record": {"recordName": "r1"}}"#], existing: [live])
        #expect(plan.results.count == 1)
        #expect(plan.results.first?.error?.code == .badRequest)
        #expect(plan.results.first?.error?.recordName == "r1")
        expectNoWrites(plan)
    }

    @Test func savedResultsCarryTheOperationsDesiredKeys() {
        let plan = Fixture.plan([modifyOperation("create", "n1", fields: #"{"title": {"value": "x"}}"#, desiredKeys: #"["count"]"#)])
        #expect(plan.results == [.saved(saved("n1", ["title": .string("x")]), desiredKeys: ["count"])])
    }
}
