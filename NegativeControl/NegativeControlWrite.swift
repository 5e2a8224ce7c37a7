// NEGATIVE CONTROL for the no-missed-change checker (docs/checker.md). It is compiled only by
// this side package (NegativeControl/build.sh), which builds `nimbus` from the main package's
// sources with this strategy in place of the real ones; nothing of it is in a real build.
//
// `records/modify` here is the classic broken design the checker must catch: the change sequence
// comes from one global PostgreSQL sequence (`nextval` is not transactional) and the zone's row
// lock is not taken while the records are written; the zone's counter only catches up
// (`GREATEST`) in the last statement before COMMIT. A writer that took sequence 10 and is slow to
// commit lets a writer with 11 commit first; a reader then gets a token at 11 and never sees 10.
import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// `records/modify` without the zone lock (see the file comment). Plain saves and deletes only.
struct NegativeControlWrite: RecordWriteStrategy {
    var checksTokenItself: Bool { false }

    func attempt(_ request: inout RecordWriteRequest, in store: RecordStore) async throws -> [ModifyResult]? {
        let session = request.session, zoneName = request.zoneName, operations = request.operations
        let atomic = request.atomic, limits = request.limits
        guard RecordStore.deleteSelfTargets(operations).isEmpty, RecordStore.assetCandidates(operations).isEmpty else {
            throw SyncError(.badRequest, "The negative-control build writes plain saves and deletes only.")
        }
        let now = store.clock.nowMilliseconds()
        try await store.pool.withConnection { connection in
            _ = try connection.run("""
                DO $$ BEGIN CREATE SEQUENCE IF NOT EXISTS nimbus_negative_control_seq INCREMENT BY 1000;
                EXCEPTION WHEN duplicate_table OR unique_violation THEN NULL; END $$
                """)
        }
        let (results, event) = try await store.pool.withTransaction { connection -> ([ModifyResult], ChangeEvent?) in
            guard let zone = try ZoneStore.zone(connection, databaseID: session.databaseID, name: zoneName), !zone.deleted else {
                throw SyncError(.zoneNotFound, "Zone \(zoneName) does not exist.")
            }
            let names = operations.compactMap { try? $0.get().recordName }
            let existing = try RecordRows.records(connection, zoneID: zone.id, zoneName: zoneName, names: names)
            var schema = try SchemaStore.loadSchema(connection, container: session.container, environment: session.environment)
            // The broken part: a block of 1000 sequences from the global sequence, no zone lock.
            let base = try connection.queryFirst("SELECT nextval('nimbus_negative_control_seq')") { try $0.int64(0) } ?? 0
            let planner = ModifyPlanner(context: ModifyPlanner.Context(
                zoneName: zoneName, userRecordName: session.userRecordName, deviceID: session.deviceID, now: now,
                baseSequence: base, environment: session.environment, maxRecordBytes: limits.maxRecordBytes, atomic: atomic))
            var plan = planner.plan(operations, existing: existing, schema: schema)
            if !plan.schemaAdditions.isEmpty {
                guard session.environment == .development else { throw SyncError(.badRequest, "The production schema cannot change by saving.") }
                _ = try SchemaStore.addToSchema(connection, container: session.container, environment: session.environment, additions: plan.schemaAdditions)
                schema = try SchemaStore.loadSchema(connection, container: session.container, environment: session.environment)
                plan = planner.plan(operations, existing: existing, schema: schema)
            }
            guard plan.hasWrites else { return (plan.results, nil) }
            guard plan.lastSequence - base < 1000 else { throw SyncError(.badRequest, "Too many writes for the negative-control build.") }
            var saveNames: [String] = [], saveTypes: [String] = [], saveFields: [String] = []
            var saveSequences: [Int64] = [], saveCreated: [Int64] = [], saveCreatedBy: [String] = [], saveCreatedUsers: [String] = []
            var deleteNames: [String] = [], deleteSequences: [Int64] = []
            for write in plan.writes {
                switch write {
                case .save(let record, let sequence, _, _):
                    saveNames.append(record.recordName)
                    saveTypes.append(record.recordType)
                    saveFields.append(Record.storage(of: record.fields).text)
                    saveSequences.append(sequence)
                    saveCreated.append(record.created.timestamp)
                    saveCreatedBy.append(record.created.deviceID)
                    saveCreatedUsers.append(record.created.userRecordName)
                case .delete(let name, _, let sequence):
                    deleteNames.append(name)
                    deleteSequences.append(sequence)
                }
            }
            _ = try connection.run("""
                INSERT INTO records (zone_id, record_name, record_type, fields, change_seq,
                                     created_at, created_by_device, created_by_user,
                                     modified_at, modified_by_device, modified_by_user, deleted, expires_at)
                SELECT \(zone.id), u.n, u.t, u.f::jsonb, u.seq,
                       'epoch'::timestamptz + u.c * interval '1 millisecond', u.cd, u.cu,
                       'epoch'::timestamptz + \(now) * interval '1 millisecond', \(session.deviceID), \(session.userRecordName),
                       false, NULL
                FROM unnest(\(PGData.textArray(saveNames)), \(PGData.textArray(saveTypes)), \(PGData.textArray(saveFields)),
                            \(PGData.int64Array(saveSequences)), \(PGData.int64Array(saveCreated)),
                            \(PGData.textArray(saveCreatedBy)), \(PGData.textArray(saveCreatedUsers)))
                     AS u(n, t, f, seq, c, cd, cu)
                ON CONFLICT (zone_id, record_name) DO UPDATE SET
                    record_type = excluded.record_type, fields = excluded.fields, wire_fields = NULL, change_seq = excluded.change_seq, created_at = excluded.created_at,
                    created_by_device = excluded.created_by_device, created_by_user = excluded.created_by_user,
                    modified_at = excluded.modified_at, modified_by_device = excluded.modified_by_device,
                    modified_by_user = excluded.modified_by_user, deleted = false, expires_at = NULL
                """)
            _ = try connection.run("""
                UPDATE records r SET deleted = true, fields = '{}'::jsonb, wire_fields = NULL, change_seq = u.seq,
                    modified_at = 'epoch'::timestamptz + \(now) * interval '1 millisecond',
                    modified_by_device = \(session.deviceID), modified_by_user = \(session.userRecordName), expires_at = NULL
                FROM unnest(\(PGData.textArray(deleteNames)), \(PGData.int64Array(deleteSequences))) AS u(n, seq)
                WHERE r.zone_id = \(zone.id) AND r.record_name = u.n
                """)
            let event = ChangeEvent(databaseID: session.databaseID, kind: .records, zoneID: zone.id, sequence: plan.lastSequence)
            // The zone's counter catches up only now, just before COMMIT.
            _ = try connection.run("UPDATE zones SET change_seq = GREATEST(change_seq, \(plan.lastSequence)) WHERE id = \(zone.id)")
            return (plan.results, event)
        }
        if let event { store.announce([event]) }
        return results
    }
}
