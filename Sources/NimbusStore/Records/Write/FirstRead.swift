import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The first read of the writes that read before they plan (`OptimisticWrite` without the zone
/// lock, `LockedWrite` under it), one round trip: the zone, whether the database has
/// subscriptions, the container's schema with its version, and the current rows (live or
/// tombstones) of the names given.
///
/// Measured when the two reads became this one (bench/callgrind.sh, Nimbus instructions, two
/// runs): `replace` (the optimistic write) 1,350,685 → 1,359,022 and 1,349,233 → 1,361,560 Ir per
/// 10-record request, `locked` 1,820,437 → 1,832,043 and 1,823,154 → 1,841,374 (+0.6–1.0 %: one
/// more column decoded, a longer statement text); `one` and `batch` (the create path) unchanged.
struct FirstRead {
    var zone: ZoneInfo
    var hasSubscriptions: Bool
    var schema: [String: RecordTypeSchema]
    var schemaVersion: Int64
    var existing: [String: Record]

    /// `locking`: take the zone's row lock (ordering the caller's transaction against every other
    /// writer of the zone); the rows then are the ones under the lock. Throws `zoneNotFound` for
    /// a missing or deleted zone.
    static func read(_ connection: PGConnection, session: Session, zoneName: String, names: [String], locking: Bool) throws -> FirstRead {
        // The locking CTE runs once, before the join (the lock's row is the one joined); the
        // plain one is folded into the join, as a plain `FROM zones`.
        let materialized: SQL = locking ? "MATERIALIZED" : "NOT MATERIALIZED"
        let lockedZone: SQL = locking ? " FOR UPDATE" : ""
        // Under the lock, `seen` is the zone's sequence in the statement's snapshot, taken before
        // the lock was granted; without it, the zone's sequence itself.
        let seen: SQL = locking
            ? "(SELECT change_seq FROM zones WHERE database_id = \(session.databaseID) AND zone_name = \(zoneName))"
            : "z.change_seq"
        let rows = try connection.query("""
            WITH z AS \(materialized) (
                SELECT zone_name, id, change_seq, tombstone_horizon_seq, deleted FROM zones
                WHERE database_id = \(session.databaseID) AND zone_name = \(zoneName)\(lockedZone)
            )
            SELECT z.zone_name, z.id, z.change_seq, z.tombstone_horizon_seq, z.deleted,
                   EXISTS (SELECT 1 FROM subscriptions WHERE database_id = \(session.databaseID)),
                   \(SchemaStore.schemaAggregate(container: session.container, environment: session.environment)),
                   \(SchemaStore.schemaVersion(container: session.container, environment: session.environment)),
                   \(seen), \(unsafeColumns: RecordRows.recordColumns)
            FROM z LEFT JOIN records r ON r.zone_id = z.id AND r.record_name = ANY(\(PGData.textArray(names)))
            """) { row -> (zone: ZoneInfo, hasSubscriptions: Bool, schema: String, schemaVersion: Int64, seen: Int64, record: Record?) in
            let zone = try ZoneStore.decodeZone(row)
            let record = row.isNull(9) ? nil : try RecordRows.decodeRecord(row, zoneName: zone.name, offset: 9)
            return (zone, try row.bool(5), try row.string(6), try row.int64(7), try row.int64(8), record)
        }
        guard let first = rows.first, !first.zone.deleted else {
            throw SyncError(.zoneNotFound, "Zone \(zoneName) does not exist.")
        }
        var existing: [String: Record]
        // Every write bumps the zone's sequence, so equal sequences in the snapshot and under the
        // lock mean no write committed in between; otherwise read the records again, now.
        if first.seen == first.zone.changeSequence {
            existing = Dictionary(rows.compactMap { $0.record.map { ($0.recordName, $0) } }, uniquingKeysWith: { first, _ in first })
        } else {
            existing = try RecordRows.records(connection, zoneID: first.zone.id, zoneName: zoneName, names: names)
        }
        return FirstRead(zone: first.zone, hasSubscriptions: first.hasSubscriptions,
                         schema: SchemaStore.decodeSchemaAggregate(first.schema), schemaVersion: first.schemaVersion,
                         existing: existing)
    }
}
