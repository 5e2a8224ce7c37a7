import NimbusSupport
import Foundation
import NimbusCore
import NimbusPostgres

/// A zone of a database, with its current change sequence.
package struct ZoneInfo: Sendable, Hashable {
    package var name: String
    /// The incarnation id (new when a deleted zone is created again).
    package var id: Int64
    package var changeSequence: Int64
    package var horizon: Int64
    package var deleted: Bool
}

package enum ZoneOperation: Sendable, Hashable {
    case create(String)
    case delete(String)

    package var zoneName: String {
        switch self {
        case .create(let name), .delete(let name): name
        }
    }
}

package enum ZoneResult: Sendable, Hashable {
    case zone(ZoneInfo)
    case deleted(String)
    case failed(String, ItemError)
}

package struct ZoneChanges: Sendable {
    package var zones: [ZoneInfo]
    package var token: String
    package var moreComing: Bool
}

/// Zones: creation, deletion, lookups and the zone change feed.
package struct ZoneStore: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded
}

extension ZoneStore {
    /// The `records/changes` token of a zone at its current sequence.
    package func currentToken(_ zone: ZoneInfo, session: Session) -> String {
        signer.encode(ZoneChangeToken(databaseID: session.databaseID, zoneID: zone.id, sequence: zone.changeSequence), zoneName: zone.name)
    }

    static func zone(_ connection: PGConnection, databaseID: Int64, name: String, lock: Bool = false) throws -> ZoneInfo? {
        let sql: SQL = lock
            ? "SELECT zone_name, id, change_seq, tombstone_horizon_seq, deleted FROM zones WHERE database_id = \(databaseID) AND zone_name = \(name) FOR UPDATE"
            : "SELECT zone_name, id, change_seq, tombstone_horizon_seq, deleted FROM zones WHERE database_id = \(databaseID) AND zone_name = \(name)"
        return try connection.queryFirst(sql, decode: decodeZone)
    }

    static func decodeZone(_ row: PGRow) throws -> ZoneInfo {
        ZoneInfo(name: try row.string(0), id: try row.int64(1), changeSequence: try row.int64(2),
                 horizon: try row.int64(3), deleted: try row.bool(4))
    }

    package func listZones(_ session: Session) async throws -> [ZoneInfo] {
        try await pool.withConnection { connection in
            try connection.query("""
                SELECT zone_name, id, change_seq, tombstone_horizon_seq, deleted FROM zones
                WHERE database_id = \(session.databaseID) AND NOT deleted ORDER BY zone_name
                """, decode: Self.decodeZone)
        }
    }

    /// Live zones by name; missing names are absent from the answer.
    package func lookupZones(_ session: Session, names: [String]) async throws -> [String: ZoneInfo] {
        let zones = try await pool.withConnection { connection in
            try connection.query("""
                SELECT zone_name, id, change_seq, tombstone_horizon_seq, deleted FROM zones
                WHERE database_id = \(session.databaseID) AND zone_name = ANY(\(PGData.textArray(names))) AND NOT deleted
                """, decode: Self.decodeZone)
        }
        return Dictionary(zones.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Creates and deletes zones, each in its own transaction. Creating an existing zone answers
    /// it; deleting removes its records and references; a deleted zone created again is a new
    /// incarnation, so tokens issued before are expired.
    package func modifyZones(_ session: Session, operations: [ZoneOperation]) async throws -> [ZoneResult] {
        var results: [ZoneResult] = []
        let changed = Lock(false)
        let event = ChangeEvent(databaseID: session.databaseID, kind: .zones)
        // Announced in the transaction that changes the zone (delivered at its commit).
        @Sendable func announce(_ connection: PGConnection) throws {
            try connection.run("SELECT pg_notify(\(ChangeEvent.channel), \(event.payload))")
            changed.withLock { $0 = true }
        }
        for operation in operations {
            let result = try await pool.withTransaction { connection -> ZoneResult in
                switch operation {
                case .create(let name):
                    if let zone = try Self.zone(connection, databaseID: session.databaseID, name: name, lock: true) {
                        if !zone.deleted { return .zone(zone) }
                        // The revived zone gets a new id: nothing may still point at the old one
                        // (subscriptions left by a delete before they went with their zone).
                        try connection.run("DELETE FROM subscriptions WHERE zone_id = \(zone.id)")
                        try announce(connection)
                        let revived = try connection.queryFirst("""
                            UPDATE zones SET id = nextval(pg_get_serial_sequence('zones', 'id')), deleted = false,
                                change_seq = 0, tombstone_horizon_seq = 0, created_at = now()
                            WHERE database_id = \(session.databaseID) AND zone_name = \(name)
                            RETURNING zone_name, id, change_seq, tombstone_horizon_seq, deleted
                            """, decode: Self.decodeZone)
                        return revived.map { .zone($0) } ?? .failed(name, ItemError(.internalError, "The zone could not be created."))
                    }
                    let created = try connection.queryFirst("""
                        INSERT INTO zones (database_id, zone_name) VALUES (\(session.databaseID), \(name))
                        ON CONFLICT DO NOTHING
                        RETURNING zone_name, id, change_seq, tombstone_horizon_seq, deleted
                        """, decode: Self.decodeZone)
                    if let created {
                        try announce(connection)
                        return .zone(created)
                    }
                    // Created concurrently by another request: answer the zone.
                    let existing = try Self.zone(connection, databaseID: session.databaseID, name: name)
                    return existing.map { .zone($0) } ?? .failed(name, ItemError(.internalError, "The zone could not be created."))
                case .delete(let name):
                    guard let zone = try Self.zone(connection, databaseID: session.databaseID, name: name, lock: true), !zone.deleted else {
                        return .failed(name, ItemError(.zoneNotFound, "Zone \(name) does not exist."))
                    }
                    try connection.run("DELETE FROM record_references WHERE zone_id = \(zone.id)")
                    // Its records' assets are released: their grace period starts now.
                    try connection.run("""
                        WITH released AS (DELETE FROM asset_references WHERE zone_id = \(zone.id) RETURNING database_id, sha256, size)
                        UPDATE assets a SET last_referenced_at = now()
                        FROM released r WHERE a.database_id = r.database_id AND a.sha256 = r.sha256 AND a.size = r.size
                        """)
                    try connection.run("DELETE FROM records WHERE zone_id = \(zone.id)")
                    // Subscriptions of the zone (zone subscriptions, query subscriptions naming it) go with it.
                    try connection.run("DELETE FROM subscriptions WHERE zone_id = \(zone.id)")
                    try connection.run("""
                        UPDATE zones SET deleted = true, change_seq = change_seq + 1 WHERE id = \(zone.id)
                        """)
                    try announce(connection)
                    return .deleted(name)
                }
            }
            results.append(result)
        }
        if changed.withLock({ $0 }) { hub.publish(ChangeEvent(databaseID: session.databaseID, kind: .zones)) }
        return results
    }

    /// Zones changed since a database token: live zones whose sequence moved or that are new to
    /// the token, and zones the token knew that were deleted since. One statement, one snapshot.
    package func zoneChanges(_ session: Session, token text: String?, limit: Int) async throws -> ZoneChanges {
        var known: [Int64: Int64]? = nil
        if let text {
            guard let token = signer.decodeDatabaseToken(text), token.databaseID == session.databaseID else {
                throw SyncError(.badRequest, "The syncToken is not a valid database token of this database (it was cut, altered, or is another database's); fetch again without a token.")
            }
            known = token.zones
        }
        let zones = try await pool.withConnection { connection in
            try connection.query("""
                SELECT zone_name, id, change_seq, tombstone_horizon_seq, deleted FROM zones
                WHERE database_id = \(session.databaseID) ORDER BY id
                """, decode: Self.decodeZone)
        }
        var map = known ?? [:]
        var changed: [ZoneInfo] = []
        var moreComing = false
        for zone in zones {
            let isChange: Bool
            if zone.deleted {
                isChange = known?[zone.id] != nil
            } else if let seen = known?[zone.id] {
                isChange = zone.changeSequence > seen
            } else {
                isChange = true
            }
            guard isChange else { continue }
            if changed.count == limit {
                moreComing = true
                break
            }
            changed.append(zone)
            if zone.deleted { map[zone.id] = nil } else { map[zone.id] = zone.changeSequence }
        }
        // Forget zones that no longer exist in any form (re-created zones have a new id).
        let ids = Set(zones.map(\.id))
        map = map.filter { ids.contains($0.key) }
        return ZoneChanges(zones: changed, token: signer.encode(DatabaseChangeToken(databaseID: session.databaseID, zones: map)),
                           moreComing: moreComing)
    }
}
