import NimbusTestSupport
import Foundation
import NimbusCore
import NimbusPostgres
@testable import NimbusStore
import Testing

/// A write strategy that passes hands its plan on (`HandedPlan`): the next one takes it only when
/// its read shows what the plan was made against, counted from the zone's sequence it read.
@Suite struct HandedPlanTests {
    let limits = Limits()

    func sequences(_ fixture: StoreFixture, zoneID: Int64) async throws -> [String: Int64] {
        let rows = try await fixture.run { connection in
            try connection.query("SELECT record_name, change_seq FROM records WHERE zone_id = \(zoneID)") { (try $0.string(0), try $0.int64(1)) }
        }
        return Dictionary(uniqueKeysWithValues: rows)
    }

    /// Creates that teach the development schema a field: the create path plans them without
    /// reading (against no records, from sequence 0) and passes, the optimistic write takes that
    /// plan and passes it on (schema additions), and the locked write writes it, counted from the
    /// zone's sequence.
    @Test func aPlanHandedOnIsWrittenFromTheZonesSequence() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            // Two writes: the zone's id and the schema (with Note.n) are in the write caches.
            for name in ["w1", "w2"] {
                _ = try await fixture.store.records.modifyRecords(session, zoneName: "_defaultZone",
                                                                  operations: [operation(.create, name, ["n": 0])], atomic: false, limits: limits)
            }
            guard let zoneID = fixture.store.caches.zoneID(.init(databaseID: session.databaseID, zoneName: "_defaultZone")) else {
                Issue.record("no zone id in the write caches"); return
            }
            let results = try await fixture.store.records.modifyRecords(
                session, zoneName: "_defaultZone",
                operations: [operation(.create, "a", ["n": 1]), operation(.create, "b", ["n": 2, "learned": "new field"])],
                atomic: true, limits: limits)
            let tags = results.map { result -> String? in if case .saved(let record, _) = result { record.changeTag } else { nil } }
            #expect(tags == [ChangeTag.make(sequence: 3), ChangeTag.make(sequence: 4)], "\(results)")
            #expect(try await sequences(fixture, zoneID: zoneID) == ["w1": 1, "w2": 2, "a": 3, "b": 4])
            let zone = try await fixture.run { connection in
                try ZoneStore.zone(connection, databaseID: session.databaseID, name: "_defaultZone")
            }
            #expect(zone?.changeSequence == 4)
            let schema = try await fixture.store.schemas.schema(container: session.container, environment: session.environment)
            #expect(schema.recordTypes["Note"]?.fields["learned"] != nil)
        }
    }

    func plan(base: Int64, existing: [String: Record] = [:], _ operations: [Result<RecordOperation, ItemError>]) -> ModifyPlan {
        let context = ModifyPlanner.Context(zoneName: "_defaultZone", userRecordName: "_u", deviceID: "d", now: 1_700_000_000_000,
                                            baseSequence: base, environment: .development, maxRecordBytes: 1 << 20, atomic: false)
        return ModifyPlanner(context: context).plan(operations, existing: existing, schema: [:])
    }

    func read(sequence: Int64, zoneID: Int64 = 7, schemaVersion: Int64 = 3, existing: [String: Record] = [:]) -> FirstRead {
        FirstRead(zone: ZoneInfo(name: "_defaultZone", id: zoneID, changeSequence: sequence, horizon: 0, deleted: false),
                  hasSubscriptions: false, schema: [:], schemaVersion: schemaVersion, existing: existing)
    }

    @Test func aPlanIsTakenOnlyWhereItWasMadeAgainstWhatTheReadShows() throws {
        let creates = [operation(.create, "a", ["n": 1]), operation(.create, "b", ["n": 2])]
        let fromZero = HandedPlan(plan: plan(base: 0, creates), baseSequence: 0, now: 1_700_000_000_000, schemaVersion: 3, rows: .none)
        // Against no records: taken when none exist, counted from the zone's sequence.
        let taken = try #require(fromZero.plan(for: read(sequence: 40)))
        let planned = plan(base: 40, creates)
        #expect(taken.writes == planned.writes)
        #expect(taken.results == planned.results)
        #expect(taken.lastSequence == 42)
        let stored = Record(recordName: "a", recordType: "Note", fields: [:], changeTag: ChangeTag.make(sequence: 5),
                            created: RecordStamp(timestamp: 1, userRecordName: "_u", deviceID: "d"),
                            modified: RecordStamp(timestamp: 1, userRecordName: "_u", deviceID: "d"), deleted: true, zoneName: "_defaultZone")
        #expect(fromZero.plan(for: read(sequence: 40, existing: ["a": stored])) == nil, "a row (even a tombstone) exists")
        #expect(fromZero.plan(for: read(sequence: 40, schemaVersion: 4)) == nil, "another schema")

        // Against the zone's rows at a sequence: taken at that sequence of that zone only.
        let asOf = HandedPlan(plan: plan(base: 9, creates), baseSequence: 9, now: 1_700_000_000_000, schemaVersion: 3,
                              rows: .asOf(zoneID: 7, sequence: 9))
        #expect(asOf.plan(for: read(sequence: 9))?.writes == plan(base: 9, creates).writes)
        #expect(asOf.plan(for: read(sequence: 10)) == nil, "a write since")
        #expect(asOf.plan(for: read(sequence: 9, zoneID: 8)) == nil, "the zone was created again")

        // A refusal is planned again by the strategy that writes (its wording may differ).
        let refused = plan(base: 0, [operation(.update, "missing", tag: "x", ["n": 1])])
        #expect(HandedPlan(plan: refused, baseSequence: 0, now: 1, schemaVersion: 3, rows: .none).plan(for: read(sequence: 0)) == nil)
    }
}
