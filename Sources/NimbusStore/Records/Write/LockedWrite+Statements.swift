import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

extension LockedWrite {
    /// Appends notifications at the database's next cursor positions. The database row lock
    /// makes cursor order commit order; it is taken only by writes that notify.
    static func writeNotifications(_ rows: [(subscription: Subscription, payload: JSONValue, record: Record)], spent: [String],
                                           connection: PGConnection, session: Session) throws -> Int64 {
        let count = Int64(rows.count)
        let newest = try connection.queryFirst("""
            WITH position AS (
                UPDATE databases SET notification_seq = notification_seq + \(count) WHERE id = \(session.databaseID)
                RETURNING notification_seq
            ), written AS (
                INSERT INTO notifications (database_id, seq, notification_id, subscription_id, notification_type, reason,
                                           record_name, record_type, zone_name, origin_device, payload)
                SELECT \(session.databaseID), position.notification_seq - \(count) + u.ordinal, u.id::uuid, u.subscription, u.kind,
                       u.reason, u.name, u.type, u.zone, \(session.deviceID), u.payload::jsonb
                FROM position, unnest(\(PGData.textArray(rows.map { $0.payload["notificationID"]?.stringValue ?? "" })),
                                      \(PGData.textArray(rows.map(\.subscription.id))),
                                      \(PGData.textArray(rows.map(\.subscription.kind.rawValue))),
                                      \(PGData.textArray(rows.map { $0.payload["reason"]?.stringValue ?? "" })),
                                      \(PGData.textArray(rows.map(\.record.recordName))),
                                      \(PGData.textArray(rows.map(\.record.recordType))),
                                      \(PGData.textArray(rows.map(\.record.zoneName))),
                                      \(PGData.textArray(rows.map(\.payload.serializedString))))
                     WITH ORDINALITY AS u(id, subscription, kind, reason, name, type, zone, payload, ordinal)
                RETURNING 1
            ), spent AS (
                DELETE FROM subscriptions WHERE database_id = \(session.databaseID) AND subscription_id = ANY(\(PGData.textArray(spent)))
                RETURNING 1
            )
            SELECT position.notification_seq, (SELECT count(*) FROM written), (SELECT count(*) FROM spent)
            FROM position
            """) { try $0.int64(0) }
        return newest ?? 0
    }

    /// Live records that reference the deleted ones with DELETE_SELF, transitively (as they are
    /// before deletion: delete notifications match against them).
    static func cascadeTargets(_ connection: PGConnection, zoneID: Int64, zoneName: String, deleted: [String], exclude: [String]) throws -> [Record] {
        try connection.query("""
            WITH RECURSIVE doomed(name) AS (
                SELECT unnest(\(PGData.textArray(deleted)))
                UNION
                SELECT ref.source_name FROM record_references ref JOIN doomed d
                    ON ref.zone_id = \(zoneID) AND ref.target_name = d.name
            )
            SELECT \(unsafeColumns: RecordRows.recordColumns) FROM records r JOIN doomed d ON r.zone_id = \(zoneID) AND r.record_name = d.name
            WHERE NOT r.deleted AND NOT (r.record_name = ANY(\(PGData.textArray(exclude))))
            ORDER BY r.record_name
            """) { try RecordRows.decodeRecord($0, zoneName: zoneName) }
    }

    /// What the rows touched by a plan held before it: DELETE_SELF edges or asset references
    /// that the write must clear.
    struct PreviousState {
        var hadEdges: Bool
        var hadAssets: Bool

        init(_ plan: ModifyPlan, existing: [String: Record], cascaded: [String: Record]) {
            var edges = false, assets = false
            for write in plan.writes {
                let name: String = switch write {
                case .save(let record, _, _, _): record.recordName
                case .delete(let name, _, _): name
                }
                guard let before = existing[name] ?? cascaded[name] else { continue }
                for value in before.fields.values {
                    if value.references.contains(where: { $0.action == .deleteSelf }) { edges = true }
                    if value.hasAssets { assets = true }
                }
            }
            hadEdges = edges
            hadAssets = assets
        }
    }

    /// Every row change of a plan in one statement: saved rows, tombstones, DELETE_SELF edges and
    /// the zone's sequence.
    static func write(_ plan: ModifyPlan, connection: PGConnection, zoneID: Int64, session: Session, now: Int64,
                              previous: PreviousState) throws {
        var saveNames: [String] = [], saveTypes: [String] = [], saveFields: [String] = [], saveWireForms: [Int64] = []
        var saveSequences: [Int64] = [], saveCreated: [Int64] = [], saveCreatedBy: [String] = [], saveCreatedUsers: [String] = []
        var saveExpires: [Int64] = []
        var deleteNames: [String] = [], deleteSequences: [Int64] = []
        var edgeTargets: [String] = [], edgeSources: [String] = []
        var assetRecords: [String] = [], assetChecksums: [String] = [], assetSizes: [Int64] = []
        var touched: [String] = []
        for write in plan.writes {
            switch write {
            case .save(let record, let sequence, let targets, let expiresAt):
                saveNames.append(record.recordName)
                saveTypes.append(record.recordType)
                let storage = Record.storage(of: record.fields)
                saveFields.append(storage.text)
                saveWireForms.append(storage.isWireForm ? 1 : 0)
                saveSequences.append(sequence)
                saveCreated.append(record.created.timestamp)
                saveCreatedBy.append(record.created.deviceID)
                saveCreatedUsers.append(record.created.userRecordName)
                saveExpires.append(expiresAt ?? Int64.min)
                for target in targets {
                    edgeTargets.append(target)
                    edgeSources.append(record.recordName)
                }
                for asset in record.fields.values.flatMap(\.assets) {
                    assetRecords.append(record.recordName)
                    assetChecksums.append(asset.fileChecksum)
                    assetSizes.append(asset.size)
                }
                touched.append(record.recordName)
            case .delete(let name, _, let sequence):
                deleteNames.append(name)
                deleteSequences.append(sequence)
                touched.append(name)
            }
        }
        // Only the parts this request needs: a plain save is one INSERT, the sequence and the
        // NOTIFY; edges and asset references are touched only when the new or the previous state
        // of a touched record has them.
        var parts: [(name: String, sql: SQL)] = []
        if !saveNames.isEmpty {
            parts.append(("saved", """
                INSERT INTO records (\(unsafeColumns: RecordRows.insertColumns))
                SELECT \(zoneID), u.n, u.t, u.f::jsonb, CASE WHEN u.w = 1 THEN u.f END, CASE WHEN u.w = 1 THEN u.seq END, u.seq,
                       'epoch'::timestamptz + u.c * interval '1 millisecond', u.cd, u.cu,
                       'epoch'::timestamptz + \(now) * interval '1 millisecond', \(session.deviceID), \(session.userRecordName),
                       false, 'epoch'::timestamptz + NULLIF(u.e, \(Int64.min)) * interval '1 millisecond'
                FROM unnest(\(PGData.textArray(saveNames)), \(PGData.textArray(saveTypes)), \(PGData.textArray(saveFields)),
                            \(PGData.int64Array(saveWireForms)), \(PGData.int64Array(saveSequences)), \(PGData.int64Array(saveCreated)),
                            \(PGData.textArray(saveCreatedBy)), \(PGData.textArray(saveCreatedUsers)), \(PGData.int64Array(saveExpires)))
                     AS u(n, t, f, w, seq, c, cd, cu, e)
                ON CONFLICT (zone_id, record_name) DO UPDATE SET \(unsafeColumns: RecordRows.upsertAssignments)
                RETURNING 1
                """))
        }
        if !deleteNames.isEmpty {
            parts.append(("tombstones", """
                UPDATE records r SET deleted = true, fields = '{}'::jsonb, wire_fields = NULL, change_seq = u.seq,
                    modified_at = 'epoch'::timestamptz + \(now) * interval '1 millisecond',
                    modified_by_device = \(session.deviceID), modified_by_user = \(session.userRecordName), expires_at = NULL
                FROM unnest(\(PGData.textArray(deleteNames)), \(PGData.int64Array(deleteSequences))) AS u(n, seq)
                WHERE r.zone_id = \(zoneID) AND r.record_name = u.n
                RETURNING 1
                """))
        }
        if !edgeTargets.isEmpty || previous.hadEdges {
            parts.append(("stale_edges", """
                DELETE FROM record_references ref
                WHERE ref.zone_id = \(zoneID) AND ref.source_name = ANY(\(PGData.textArray(touched)))
                  AND NOT EXISTS (SELECT 1 FROM unnest(\(PGData.textArray(edgeTargets)), \(PGData.textArray(edgeSources))) AS e(t, s)
                                  WHERE e.t = ref.target_name AND e.s = ref.source_name)
                RETURNING 1
                """))
            parts.append(("new_edges", """
                INSERT INTO record_references (zone_id, target_name, source_name)
                SELECT \(zoneID), e.t, e.s FROM unnest(\(PGData.textArray(edgeTargets)), \(PGData.textArray(edgeSources))) AS e(t, s)
                ON CONFLICT DO NOTHING
                RETURNING 1
                """))
        }
        parts.append(("sequence", "UPDATE zones SET change_seq = \(plan.lastSequence) WHERE id = \(zoneID) RETURNING 1"))
        if !assetRecords.isEmpty || previous.hadAssets {
            parts.append(("asset_refs", """
                SELECT u.r, decode(u.c, 'base64') AS sha256, u.z
                FROM unnest(\(PGData.textArray(assetRecords)), \(PGData.textArray(assetChecksums)), \(PGData.int64Array(assetSizes))) AS u(r, c, z)
                """))
            parts.append(("stale_asset_refs", """
                DELETE FROM asset_references ref
                WHERE ref.zone_id = \(zoneID) AND ref.record_name = ANY(\(PGData.textArray(touched)))
                  AND NOT EXISTS (SELECT 1 FROM asset_refs n WHERE n.r = ref.record_name AND n.sha256 = ref.sha256 AND n.z = ref.size)
                RETURNING ref.sha256, ref.size
                """))
            parts.append(("new_asset_refs", """
                INSERT INTO asset_references (zone_id, record_name, database_id, sha256, size)
                SELECT \(zoneID), n.r, \(session.databaseID), n.sha256, n.z FROM asset_refs n
                ON CONFLICT DO NOTHING
                RETURNING 1
                """))
            // Newly referenced or just released assets: the grace period counts from now.
            parts.append(("touched_assets", """
                UPDATE assets a SET last_referenced_at = now(), referenced = true
                WHERE a.database_id = \(session.databaseID) AND a.complete
                  AND ((a.sha256, a.size) IN (SELECT sha256, z FROM asset_refs) OR (a.sha256, a.size) IN (SELECT sha256, size FROM stale_asset_refs))
                RETURNING 1
                """))
        }
        var statement: SQL = "WITH "
        for (index, part) in parts.enumerated() {
            statement.append(index == 0 ? "" : ", ")
            statement.append(SQL(stringLiteral: part.name))
            statement.append(" AS (")
            statement.append(part.sql)
            statement.append(")")
        }
        // Data-modifying parts run whether or not they are read; the SELECT parts must be read.
        statement.append(" SELECT (SELECT count(*) FROM sequence)")
        if parts.contains(where: { $0.name == "asset_refs" }) { statement.append(", (SELECT count(*) FROM asset_refs)") }
        try connection.run(statement)
    }

}
