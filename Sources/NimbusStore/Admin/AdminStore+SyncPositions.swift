import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// Where one device last synced one zone, and how far behind the zone's head it is.
package struct DeviceZonePosition: Sendable, Hashable {
    package var tokenID: String
    package var container: String
    package var environment: String
    package var zoneName: String
    package var syncedAt: Date
    /// Records (tombstones included) changed after the device's position: what its next
    /// `records/changes` would bring, counted up to `AdminStore.maxCountedLag`.
    package var lag: Int
}

extension AdminStore {
    /// Lags above this are shown as "more than" (counting stops there).
    package static let maxCountedLag = 100_000

    /// Each of `user`'s devices' position in every live zone it synced, by token, container,
    /// environment and zone. Positions this instance noted but has not written yet are written first.
    package func syncPositions(user: String) async throws -> [DeviceZonePosition] {
        await database.syncPositions.flush()
        let cap = Int64(Self.maxCountedLag + 1)
        return try await pool.query("""
            SELECT p.token_id, d.container, d.environment, z.zone_name, p.synced_at,
                   (SELECT count(*) FROM (SELECT 1 FROM records r WHERE r.zone_id = z.id AND r.change_seq > p.change_seq
                                          AND r.change_seq <= z.change_seq LIMIT \(cap)) behind)
            FROM users u
            JOIN device_tokens t ON t.user_id = u.id
            JOIN device_zone_positions p ON p.token_id = t.token_id
            JOIN zones z ON z.id = p.zone_id AND NOT z.deleted
            JOIN databases d ON d.id = z.database_id
            WHERE u.name = \(user)
            ORDER BY p.token_id, d.container, d.environment, z.zone_name
            """) { row in
            DeviceZonePosition(tokenID: try row.string(0), container: try row.string(1), environment: try row.string(2),
                               zoneName: try row.string(3), syncedAt: try row.date(4), lag: Int(try row.int64(5)))
        }
    }
}
