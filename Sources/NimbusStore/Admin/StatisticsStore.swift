import Foundation
import NimbusSupport
import NimbusCore
import NimbusPostgres

/// One user's container in one environment, as `nimbus stats` shows it.
package struct DatabaseStats: Sendable {
    package var user: String
    package var container: String
    package var environment: String
    package var liveByType: [(type: String, count: Int)]
    package var tombstones: Int
    package var assets: Int
    package var assetBytes: Int64
    /// When the oldest live event (a record of a type with retention) expires: what a prune
    /// removes next.
    package var nextExpiry: Date?
}

package struct DeviceStats: Sendable {
    package var user: String
    package var device: String
    package var tokenID: String
    package var lastUsed: Date?
    package var revoked: Bool
}

/// Counts per database and per device, for `nimbus stats`.
package struct StatisticsStore: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded
}

extension StatisticsStore {
    package func stats() async throws -> (databases: [DatabaseStats], devices: [DeviceStats]) {
        try await pool.withConnection { connection in
            let databases = try connection.query("""
                SELECT u.name, d.container, d.environment, d.id,
                       (SELECT count(*) FROM records r JOIN zones z ON z.id = r.zone_id WHERE z.database_id = d.id AND r.deleted)::int8,
                       (SELECT count(*) FROM assets a WHERE a.database_id = d.id AND a.complete)::int8,
                       (SELECT COALESCE(sum(a.size), 0) FROM assets a WHERE a.database_id = d.id AND a.complete)::int8,
                       (SELECT min(\(Pruner.retentionStart) + s.retention_days * interval '1 day')
                         FROM records r JOIN zones z ON z.id = r.zone_id
                         JOIN schema_record_types s ON s.container = d.container AND s.environment = d.environment AND s.record_type = r.record_type
                         WHERE z.database_id = d.id AND NOT r.deleted AND s.retention_days IS NOT NULL)
                FROM databases d JOIN users u ON u.id = d.owner_user_id
                ORDER BY u.name, d.container, d.environment
                """) { row in
                (user: try row.string(0), container: try row.string(1), environment: try row.string(2), id: try row.int64(3),
                 tombstones: try row.int(4), assets: try row.int(5), bytes: try row.int64(6), oldest: try row.optionalDate(7))
            }
            var result: [DatabaseStats] = []
            for database in databases {
                let types = try connection.query("""
                    SELECT r.record_type, count(*)::int8 FROM records r JOIN zones z ON z.id = r.zone_id
                    WHERE z.database_id = \(database.id) AND NOT r.deleted GROUP BY r.record_type ORDER BY r.record_type
                    """) { (type: try $0.string(0), count: try $0.int(1)) }
                result.append(DatabaseStats(user: database.user, container: database.container, environment: database.environment,
                                            liveByType: types, tombstones: database.tombstones, assets: database.assets,
                                            assetBytes: database.bytes, nextExpiry: database.oldest))
            }
            let devices = try connection.query("""
                SELECT u.name, t.device_name, t.token_id, t.last_used_at, t.revoked_at IS NOT NULL
                FROM device_tokens t JOIN users u ON u.id = t.user_id ORDER BY u.name, t.device_name, t.token_id
                """) { row in
                DeviceStats(user: try row.string(0), device: try row.string(1), tokenID: try row.string(2),
                            lastUsed: try row.optionalDate(3), revoked: try row.bool(4))
            }
            return (result, devices)
        }
    }
}
