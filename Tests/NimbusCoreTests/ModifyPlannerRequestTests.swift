@testable import NimbusCore
import Testing

/// Whole-request behaviour of the planner: sequences, atomicity, schema learning, size limit, append-only types.
@Suite struct ModifyPlannerRequestTests {
    // MARK: sequences

    @Test func writesTakeConsecutiveSequencesInRequestOrderAndOnlyWritesConsumeThem() {
        let existing = [Fixture.record("r1"), Fixture.record("r2"), Fixture.record("r3"), Fixture.record("r4")]
        let plan = Fixture.plan([
            modifyOperation("create", "a", fields: #"{"title": {"value": "x"}}"#),                   // 101
            modifyOperation("update", "r1", tag: "stale", fields: #"{"count": {"value": 9}}"#),     // CONFLICT
            modifyOperation("create", "r2", fields: #"{"title": {"value": "a"}, "count": {"value": 1}}"#), // retry: unchanged
            modifyOperation("delete", "r3", tag: "t1"),                                              // 102
            modifyOperation("forceDelete", "ghost"),                                                 // nothing to delete
            modifyOperation("create", "bad", fields: #"{"count": {"value": "x"}}"#),                // BAD_REQUEST
            modifyOperation("update", "r4", tag: "t1", fields: #"{"count": {"value": 5}}"#),        // 103
            modifyOperation("forceUpdate", "b", fields: #"{"count": {"value": 6}}"#),               // 104
        ], existing: existing)

        #expect(plan.writes.map(\.sequence) == [101, 102, 103, 104])
        #expect(plan.writes.map(\.recordName) == ["a", "r3", "r4", "b"])
        #expect(plan.lastSequence == 104)
        #expect(plan.deletedNames == ["r3"])
        #expect(plan.results.count == 8)
        #expect(plan.results[0].savedRecord?.changeTag == ChangeTag.make(sequence: 101))
        #expect(plan.results[1].error?.code == .conflict)
        #expect(plan.results[2].savedRecord?.changeTag == "t1")
        #expect(plan.results[3] == .deleted(recordName: "r3"))
        #expect(plan.results[4] == .deleted(recordName: "ghost"))
        #expect(plan.results[5].error?.code == .badRequest)
        #expect(plan.results[6].savedRecord?.changeTag == ChangeTag.make(sequence: 103))
        #expect(plan.results[7].savedRecord?.changeTag == ChangeTag.make(sequence: 104))
        // The answer and the row agree on the tag.
        for write in plan.writes {
            if let record = write.savedRecord { #expect(record.changeTag == ChangeTag.make(sequence: write.sequence)) }
        }
    }

    @Test func sequencesContinueFromTheZonesBaseSequence() {
        let plan = Fixture.plan([modifyOperation("create", "a"), modifyOperation("create", "b")], context: Fixture.context(baseSequence: 0))
        #expect(plan.writes.map(\.sequence) == [1, 2])
        #expect(plan.results.map { $0.savedRecord?.changeTag } == ["1", "2"])
        #expect(plan.lastSequence == 2)
    }

    @Test func aRequestWithNothingToWriteLeavesTheSequenceAlone() {
        let plan = Fixture.plan([modifyOperation("forceDelete", "ghost")])
        #expect(!plan.hasWrites)
        #expect(plan.lastSequence == Fixture.baseSequence)
    }

    // MARK: atomic

    @Test func atomicRequestWithOneFailureFailsEveryOtherOperationWithAtomicErrorAndWritesNothing() {
        let plan = Fixture.plan([
            modifyOperation("create", "a", type: "Fresh", fields: #"{"x": {"value": 1}}"#),
            modifyOperation("update", "r1", tag: "stale", fields: #"{"count": {"value": 2}}"#),
            modifyOperation("create", "r2", fields: #"{"title": {"value": "a"}, "count": {"value": 1}}"#),
            modifyOperation("forceDelete", "ghost"),
            modifyOperation("delete", "r3", tag: "t1"),
        ], existing: [Fixture.record("r1"), Fixture.record("r2"), Fixture.record("r3")], context: Fixture.context(atomic: true))

        #expect(plan.results.map { $0.error?.code } == [.atomicError, .conflict, .atomicError, .atomicError, .atomicError])
        #expect(plan.results.map { $0.error?.recordName } == ["a", "r1", "r2", "ghost", "r3"])
        #expect(plan.results[1].error?.serverRecord == Fixture.record("r1"))
        #expect(plan.writes.isEmpty)
        #expect(plan.schemaAdditions.isEmpty)
        #expect(plan.deletedNames.isEmpty)
        #expect(plan.lastSequence == Fixture.baseSequence)
    }

    @Test func atomicRequestKeepsAMalformedOperationsOwnError() {
        let plan = Fixture.plan([
            modifyOperation("create", "a"),
            modifyOperation("update", "r1"), // no tag
        ], existing: [Fixture.record("r1")], context: Fixture.context(atomic: true))
        #expect(plan.results.map { $0.error?.code } == [.atomicError, .badRequest])
        #expect(plan.writes.isEmpty)
    }

    @Test func atomicRequestWithoutFailuresWritesEverything() {
        let plan = Fixture.plan([
            modifyOperation("create", "a", type: "Fresh", fields: #"{"x": {"value": 1}}"#),
            modifyOperation("delete", "r1", tag: "t1"),
        ], existing: [Fixture.record("r1")], context: Fixture.context(atomic: true))
        #expect(plan.results.allSatisfy { $0.error == nil })
        #expect(plan.writes.map(\.sequence) == [101, 102])
        #expect(plan.schemaAdditions == ["Fresh": ["x": .int64]])
    }

    @Test func nonAtomicFailuresDoNotStopTheOtherOperations() {
        let plan = Fixture.plan([
            modifyOperation("update", "missing", tag: "t1"),
            modifyOperation("create", "a"),
            modifyOperation("delete", "r1", tag: "stale"),
            modifyOperation("create", "b"),
        ], existing: [Fixture.record("r1")])
        #expect(plan.results.map { $0.error?.code } == [.notFound, nil, .conflict, nil])
        #expect(plan.writes.map(\.recordName) == ["a", "b"])
        #expect(plan.writes.map(\.sequence) == [101, 102])
    }

    // MARK: schema learning (development)

    @Test func aNewTypeAndItsFieldsAreSchemaAdditions() {
        let plan = Fixture.plan([modifyOperation("create", "a", type: "Fresh", fields: #"{"x": {"value": 1}, "y": {"value": "s"}}"#)])
        #expect(plan.schemaAdditions == ["Fresh": ["x": .int64, "y": .string]])
    }

    @Test func aNewFieldOfAKnownTypeIsASchemaAddition() {
        let plan = Fixture.plan([modifyOperation("create", "a", fields: #"{"title": {"value": "t"}, "extra": {"value": 1.5}}"#)])
        #expect(plan.schemaAdditions == ["Note": ["extra": .double]])
    }

    @Test func laterOperationsSeeFieldsLearnedEarlierInTheRequest() {
        let plan = Fixture.plan([
            modifyOperation("create", "a", type: "Fresh", fields: #"{"x": {"value": 1}}"#),
            modifyOperation("create", "b", type: "Fresh", fields: #"{"x": {"value": "one"}}"#),
        ])
        #expect(plan.results[0].error == nil)
        #expect(plan.results[1].error?.code == .badRequest)
        #expect(plan.schemaAdditions == ["Fresh": ["x": .int64]])
    }

    @Test func schemaAdditionsOfFailedOperationsAreDropped() {
        let reference = #"{"recordName": "ghost", "action": "DELETE_SELF"}"#
        let plan = Fixture.plan([
            modifyOperation("create", "a", type: "Fresh", fields: #"{"y": {"value": 1}, "ref": {"value": \#(reference), "type": "REFERENCE"}}"#),
            modifyOperation("create", "b", fields: #"{"extra": {"value": 2}}"#),
            modifyOperation("create", "c", type: "Empty"),
        ])
        #expect(plan.results.map { $0.error?.code } == [.validatingReferenceError, nil, nil])
        #expect(plan.schemaAdditions == ["Note": ["extra": .int64], "Empty": [:]])
    }

    @Test func productionRefusesUnknownTypesAndLearnsNothing() {
        let plan = Fixture.plan([modifyOperation("create", "a", type: "Fresh", fields: #"{"x": {"value": 1}}"#)],
                                context: Fixture.context(environment: .production))
        #expect(plan.results.first?.error?.code == .badRequest)
        #expect(plan.schemaAdditions.isEmpty)
        #expect(plan.writes.isEmpty)
    }

    // MARK: maxRecordBytes

    @Test func aRecordOfExactlyMaxRecordBytesIsSavedAndOneByteMoreIsLimitExceeded() {
        let text = String(repeating: "x", count: 300)
        let size = Record.storedSize(["title": .string(text)])
        let operation = modifyOperation("create", "n1", fields: #"{"title": {"value": "\#(text)"}}"#)

        let atLimit = Fixture.plan([operation], context: Fixture.context(maxRecordBytes: size))
        #expect(atLimit.results.first?.savedRecord?.fields == ["title": .string(text)])

        let overLimit = Fixture.plan([operation], context: Fixture.context(maxRecordBytes: size - 1))
        #expect(overLimit.results.first?.error?.code == .limitExceeded)
        #expect(overLimit.results.first?.error?.recordName == "n1")
        #expect(overLimit.results.first?.error?.reason.contains("maxRecordBytes") == true)
        #expect(overLimit.writes.isEmpty)
        #expect(overLimit.lastSequence == Fixture.baseSequence)
    }

    @Test func theSizeLimitAppliesToTheMergedFieldsOfAnUpdate() {
        let live = Fixture.record("r1", fields: ["title": .string(String(repeating: "y", count: 500))])
        let merged = live.fields.merging(["count": .int64(1)]) { $1 }
        let operation = modifyOperation("update", "r1", tag: "t1", fields: #"{"count": {"value": 1}}"#)

        let atLimit = Fixture.plan([operation], existing: [live], context: Fixture.context(maxRecordBytes: Record.storedSize(merged)))
        #expect(atLimit.results.first?.savedRecord?.fields == merged)
        let overLimit = Fixture.plan([operation], existing: [live], context: Fixture.context(maxRecordBytes: Record.storedSize(merged) - 1))
        #expect(overLimit.results.first?.error?.code == .limitExceeded)
    }

    // MARK: appendOnly

    static let event = Fixture.record("e1", type: "Event", fields: ["appName": .string("Safari"), "timestamp": .timestamp(Fixture.earlier)])

    @Test(arguments: ["update", "replace", "forceUpdate", "forceReplace"])
    func everyUpdateFormOfAnExistingAppendOnlyRecordIsAccessDenied(kind: String) {
        let plan = Fixture.plan([modifyOperation(kind, "e1", type: "Event", tag: "t1", fields: #"{"appName": {"value": "Mail"}}"#)],
                                existing: [Self.event])
        #expect(plan.results.first?.error?.code == .accessDenied)
        #expect(plan.results.first?.error?.recordName == "e1")
        #expect(plan.writes.isEmpty)
    }

    @Test func appendOnlyRecordsCanBeCreatedAndDeleted() {
        let plan = Fixture.plan([
            modifyOperation("create", "e2", type: "Event", fields: #"{"appName": {"value": "Mail"}, "timestamp": {"value": 1795000000000}}"#),
            modifyOperation("delete", "e1", type: nil, tag: "t1"),
            modifyOperation("forceDelete", "e3", type: nil),
        ], existing: [Self.event, Fixture.record("e3", type: "Event", fields: [:])])
        #expect(plan.results.map { $0.error?.code } == [nil, nil, nil])
        #expect(plan.writes.map(\.recordName) == ["e2", "e1", "e3"])
    }

    @Test func anIdenticalCreateRetryOfAnAppendOnlyRecordIsNotAnUpdate() {
        let plan = Fixture.plan([modifyOperation("create", "e1", type: "Event",
                                                 fields: #"{"appName": {"value": "Safari"}, "timestamp": {"value": \#(Fixture.earlier)}}"#)],
                                existing: [Self.event])
        #expect(plan.results == [.saved(Self.event, desiredKeys: nil)])
        #expect(plan.writes.isEmpty)
    }

    @Test(arguments: ["forceUpdate", "forceReplace"])
    func forceSavesOfAMissingAppendOnlyRecordCreateIt(kind: String) {
        let plan = Fixture.plan([modifyOperation(kind, "e9", type: "Event", fields: #"{"appName": {"value": "Mail"}}"#)],
                                existing: [Fixture.record("e9", type: "Event", deleted: true)])
        #expect(plan.results.first?.savedRecord?.fields == ["appName": .string("Mail")])
        #expect(plan.writes.count == 1)
    }
}
