@testable import NimbusCore
import Testing

/// DELETE_SELF references, cascades and retention expiry in the planner (docs/api.md Schema and Details).
@Suite struct ModifyPlannerReferenceTests {
    static func link(_ name: String, to target: String, action: String = "DELETE_SELF", zone: String? = nil, kind: String = "create") -> String {
        let zoneMember = zone.map { #", "zoneID": {"zoneName": "\#($0)"}"# } ?? ""
        return modifyOperation(kind, name, type: "Link",
                               fields: #"{"target": {"value": {"recordName": "\#(target)", "action": "\#(action)"\#(zoneMember)}}}"#)
    }

    // MARK: DELETE_SELF validation

    @Test func aDeleteSelfReferenceToALiveRecordIsSavedWithItsTargetListed() {
        let plan = Fixture.plan([Self.link("l1", to: "r1")], existing: [Fixture.record("r1")])
        #expect(plan.results.first?.error == nil)
        #expect(plan.writes.first?.deleteSelfTargets == ["r1"])
        #expect(plan.results.first?.savedRecord?.fields["target"] == .reference(RecordReference(recordName: "r1", action: .deleteSelf)))
    }

    @Test func aTargetSavedInTheSameRequestCountsWhicheverComesFirst() {
        let before = Fixture.plan([modifyOperation("create", "n9"), Self.link("l1", to: "n9")])
        let after = Fixture.plan([Self.link("l1", to: "n9"), modifyOperation("create", "n9")])
        #expect(before.results.map { $0.error?.code } == [nil, nil])
        #expect(after.results.map { $0.error?.code } == [nil, nil])
        #expect(after.writes.first?.deleteSelfTargets == ["n9"])
    }

    @Test func aMissingTargetIsAValidatingReferenceError() {
        let plan = Fixture.plan([Self.link("l1", to: "ghost")])
        #expect(plan.results.first?.error?.code == .validatingReferenceError)
        #expect(plan.results.first?.error?.recordName == "l1")
        #expect(plan.writes.isEmpty)
        #expect(plan.lastSequence == Fixture.baseSequence)
    }

    @Test func aTombstonedTargetIsAValidatingReferenceError() {
        let plan = Fixture.plan([Self.link("l1", to: "r1")], existing: [Fixture.record("r1", deleted: true)])
        #expect(plan.results.first?.error?.code == .validatingReferenceError)
    }

    @Test func aTargetDeletedInTheSameRequestIsAValidatingReferenceError() {
        let plan = Fixture.plan([modifyOperation("delete", "r1", tag: "t1"), Self.link("l1", to: "r1")],
                                existing: [Fixture.record("r1")])
        #expect(plan.results[0] == .deleted(recordName: "r1"))
        #expect(plan.results[1].error?.code == .validatingReferenceError)
        #expect(plan.writes == [.delete(recordName: "r1", recordType: "Note", sequence: 101)])
    }

    @Test func aTargetWhoseDeleteFailsStillExists() {
        let plan = Fixture.plan([modifyOperation("delete", "r1", tag: "stale"), Self.link("l1", to: "r1")],
                                existing: [Fixture.record("r1")])
        #expect(plan.results[0].error?.code == .conflict)
        #expect(plan.results[1].error == nil)
    }

    @Test func aTargetWhoseOwnSaveFailsDoesNotExistAfterTheRequest() {
        // b's save fails (its own DELETE_SELF target is missing), so b does not exist after the
        // request and a's reference to it must fail too.
        let plan = Fixture.plan([Self.link("a", to: "b"), Self.link("b", to: "ghost")])
        #expect(plan.results[1].error?.code == .validatingReferenceError)
        #expect(plan.results[0].error?.code == .validatingReferenceError)
        #expect(plan.writes.isEmpty)
    }

    @Test func aDeleteSelfReferenceIntoAnotherZoneIsAValidatingReferenceError() {
        let plan = Fixture.plan([Self.link("l1", to: "r1", zone: "Elsewhere")], existing: [Fixture.record("r1")])
        #expect(plan.results.first?.error?.code == .validatingReferenceError)
        #expect(plan.results.first?.error?.reason.contains("Elsewhere") == true)
    }

    @Test func aDeleteSelfReferenceNamingItsOwnZoneIsAccepted() {
        let plan = Fixture.plan([Self.link("l1", to: "r1", zone: Fixture.zone)], existing: [Fixture.record("r1")])
        #expect(plan.results.first?.error == nil)
        #expect(plan.writes.first?.deleteSelfTargets == ["r1"])
    }

    @Test func aNoneReferenceMayPointAnywhere() {
        let plan = Fixture.plan([Self.link("l1", to: "ghost", action: "NONE"), Self.link("l2", to: "x", action: "NONE", zone: "Elsewhere")])
        #expect(plan.results.map { $0.error?.code } == [nil, nil])
        #expect(plan.writes.map(\.deleteSelfTargets) == [[], []])
    }

    @Test func everyDeleteSelfElementOfAReferenceListIsATargetListedOnce() {
        let list = #"[{"recordName": "r1", "action": "DELETE_SELF"}, {"recordName": "r2", "action": "DELETE_SELF"},"#
            + #" {"recordName": "r1", "action": "DELETE_SELF"}, {"recordName": "ghost"}]"#
        let plan = Fixture.plan([modifyOperation("create", "l1", type: "Link", fields: #"{"targets": {"value": \#(list)}}"#)],
                                existing: [Fixture.record("r1"), Fixture.record("r2")])
        #expect(plan.writes.first?.deleteSelfTargets == ["r1", "r2"])
    }

    @Test func anUpdateListsTheDeleteSelfTargetsItKeeps() {
        let stored = Fixture.record("l0", type: "Link", fields: ["target": .reference(RecordReference(recordName: "r1", action: .deleteSelf))])
        let plan = Fixture.plan([modifyOperation("forceUpdate", "l0", type: "Link", fields: #"{"note": {"value": "kept"}}"#)],
                                existing: [stored, Fixture.record("r1")])
        #expect(plan.writes.first?.deleteSelfTargets == ["r1"])
    }

    @Test func aFailedReferenceConsumesNoSequence() {
        let plan = Fixture.plan([Self.link("l1", to: "ghost"), modifyOperation("create", "n1")])
        #expect(plan.writes.map(\.recordName) == ["n1"])
        #expect(plan.writes.map(\.sequence) == [101])
        #expect(plan.results[1].savedRecord?.changeTag == ChangeTag.make(sequence: 101))
    }

    // MARK: cascades

    @Test func addCascadeAppendsTombstonesWithTheNextSequences() {
        var plan = Fixture.plan([modifyOperation("delete", "r1", tag: "t1")], existing: [Fixture.record("r1")])
        plan.addCascade([(recordName: "c1", recordType: "Link"), (recordName: "c2", recordType: "Link")])
        #expect(plan.writes == [
            .delete(recordName: "r1", recordType: "Note", sequence: 101),
            .delete(recordName: "c1", recordType: "Link", sequence: 102),
            .delete(recordName: "c2", recordType: "Link", sequence: 103),
        ])
        #expect(plan.deletedNames == ["r1", "c1", "c2"])
        #expect(plan.lastSequence == 103)
        #expect(plan.results == [.deleted(recordName: "r1")])
    }

    @Test func addCascadeOfNothingChangesNothing() {
        var plan = Fixture.plan([modifyOperation("forceDelete", "ghost")])
        plan.addCascade([])
        #expect(!plan.hasWrites)
        #expect(plan.lastSequence == Fixture.baseSequence)
    }

    // MARK: retention

    static let day: Int64 = 86_400_000

    static func event(created: Int64, timestamp: Int64?) -> Record {
        var fields: [String: FieldValue] = ["appName": .string("Safari")]
        if let timestamp { fields["timestamp"] = .timestamp(timestamp) }
        return Fixture.record("e1", type: "Event", fields: fields, created: created)
    }

    @Test func expiryCountsFromTheFieldWhenItIsEarlierThanCreation() {
        let record = Self.event(created: Fixture.now, timestamp: Fixture.now - 5 * Self.day)
        #expect(ModifyPlanner.expiry(record, policy: RetentionPolicy(days: 30, field: "timestamp")) == Fixture.now + 25 * Self.day)
    }

    @Test func aFutureDatedEventExpiresCountingFromItsCreation() {
        let record = Self.event(created: Fixture.now, timestamp: Fixture.now + 1000 * Self.day)
        #expect(ModifyPlanner.expiry(record, policy: RetentionPolicy(days: 30, field: "timestamp")) == Fixture.now + 30 * Self.day)
    }

    @Test func expiryCountsFromCreationWithoutTheFieldOrAPolicyField() {
        let withoutValue = Self.event(created: Fixture.now, timestamp: nil)
        #expect(ModifyPlanner.expiry(withoutValue, policy: RetentionPolicy(days: 7, field: "timestamp")) == Fixture.now + 7 * Self.day)
        let withValue = Self.event(created: Fixture.now, timestamp: 5)
        #expect(ModifyPlanner.expiry(withValue, policy: RetentionPolicy(days: 7)) == Fixture.now + 7 * Self.day)
    }

    @Test func zeroDaysExpiresAtTheStartAndNoPolicyNeverExpires() {
        let record = Self.event(created: Fixture.now, timestamp: Fixture.now - 10)
        #expect(ModifyPlanner.expiry(record, policy: RetentionPolicy(days: 0, field: "timestamp")) == Fixture.now - 10)
        #expect(ModifyPlanner.expiry(record, policy: nil) == nil)
    }

    @Test func savesOfARetainedTypeCarryTheirExpiryAndOthersNone() {
        let plan = Fixture.plan([
            modifyOperation("create", "e1", type: "Event", fields: #"{"timestamp": {"value": \#(Fixture.now + 3 * Self.day)}}"#),
            modifyOperation("create", "e2", type: "Event", fields: #"{"timestamp": {"value": \#(Fixture.now - 3 * Self.day)}}"#),
            modifyOperation("create", "n1"),
        ])
        #expect(plan.writes.map(\.expiresAt) == [Fixture.now + 30 * Self.day, Fixture.now + 27 * Self.day, .some(nil)])
    }

    @Test func anUpdateCountsRetentionFromTheOriginalCreation() {
        let schema = ["Command": RecordTypeSchema(name: "Command", fields: ["timestamp": .timestamp], retention: RetentionPolicy(days: 7, field: "timestamp"))]
        let stored = Fixture.record("c1", type: "Command", fields: ["timestamp": .timestamp(Fixture.now)], created: Fixture.earlier)
        let plan = Fixture.plan([modifyOperation("update", "c1", type: nil, tag: "t1", fields: #"{"timestamp": {"value": \#(Fixture.now + 1)}}"#)],
                                existing: [stored], schema: schema)
        #expect(plan.writes.map(\.expiresAt) == [Fixture.earlier + 7 * Self.day])
        #expect(plan.results.first?.savedRecord?.created == stored.created)
    }
}
