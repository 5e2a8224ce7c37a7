import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// What the console's retention page shows about one record type.
package struct TypeRetention: Sendable, Hashable {
    package var recordType: String
    package var expiringWithinDay: Int
    package var expiringWithinWeek: Int
    package var tombstones: Int
    /// Tombstones old enough to expire at the next scheduled prune.
    package var tombstonesExpiringNext: Int
}

/// A zone whose change history was cut: tokens older than its horizon get CHANGE_TOKEN_EXPIRED.
package struct ZoneHorizon: Sendable, Hashable {
    package var user: String
    package var container: String
    package var environment: String
    package var zoneName: String
    package var horizon: Int64
    package var head: Int64
}

/// A device whose position in a zone is older than a tombstone the next prune removes: its next
/// `records/changes` gets CHANGE_TOKEN_EXPIRED unless it syncs first.
package struct DeviceFallingBehind: Sendable, Hashable {
    package var user: String
    package var deviceName: String
    package var tokenID: String
    package var container: String
    package var environment: String
    package var zoneName: String
    package var lastSyncAt: Date
}

package struct RetentionSummary: Sendable {
    package var types: [TypeRetention]
    package var horizons: [ZoneHorizon]
    package var devicesFallingBehind: [DeviceFallingBehind]
}

/// Storage of one user in one container and environment.
package struct DatabaseStorage: Sendable, Hashable {
    package var user: String
    package var container: String
    package var environment: String
    package var records: Int
    package var tombstones: Int
    package var recordBytes: Int64
    package var assets: Int
    package var assetBytes: Int64
}

package struct LargeAsset: Sendable, Hashable {
    package var user: String
    package var container: String
    package var size: Int64
    package var createdAt: Date
    package var references: Int
}

package struct StorageSummary: Sendable {
    package var databases: [DatabaseStorage]
    /// Users by the asset bytes they store (what `userQuotaBytes` limits), most first.
    package var assetBytesByUser: [(user: String, bytes: Int64)]
    package var largestAssets: [LargeAsset]
    /// Complete assets no record points at: collected once their grace period has passed.
    package var orphans: Int
    package var orphanBytes: Int64
}

extension AdminStore {
    /// Retention as of now, for tombstones kept `tombstoneSeconds` and a next prune in
    /// `secondsToNextPrune`; at most `limit` horizons and devices.
    package func retention(tombstoneSeconds: Int64, secondsToNextPrune: Int64, limit: Int = 200) async throws -> RetentionSummary {
        await database.syncPositions.flush()
        let cutoff: SQL = "now() - \(tombstoneSeconds) * interval '1 second' + \(secondsToNextPrune) * interval '1 second'"
        var typesQuery: SQL = """
            WITH expiring AS (
                SELECT record_type, count(*) FILTER (WHERE expires_at < now() + interval '1 day') AS day, count(*) AS week
                FROM records WHERE expires_at IS NOT NULL AND NOT deleted AND expires_at < now() + interval '7 days'
                GROUP BY record_type
            ), tombstones AS (
                SELECT record_type, count(*) AS total, count(*) FILTER (WHERE modified_at <
            """
        typesQuery.append(cutoff)
        typesQuery.append("""
            ) AS next
                FROM records WHERE deleted GROUP BY record_type
            )
            SELECT COALESCE(e.record_type, t.record_type), COALESCE(e.day, 0), COALESCE(e.week, 0), COALESCE(t.total, 0), COALESCE(t.next, 0)
            FROM expiring e FULL JOIN tombstones t ON t.record_type = e.record_type
            ORDER BY 1
            """)
        let types = try await pool.query(typesQuery) { row in
            TypeRetention(recordType: try row.string(0), expiringWithinDay: Int(try row.int64(1)), expiringWithinWeek: Int(try row.int64(2)),
                          tombstones: Int(try row.int64(3)), tombstonesExpiringNext: Int(try row.int64(4)))
        }
        let horizons = try await pool.query("""
            SELECT u.name, d.container, d.environment, z.zone_name, z.tombstone_horizon_seq, z.change_seq
            FROM zones z JOIN databases d ON d.id = z.database_id JOIN users u ON u.id = d.owner_user_id
            WHERE z.tombstone_horizon_seq > 0 AND NOT z.deleted
            ORDER BY u.name, d.container, d.environment, z.zone_name LIMIT \(Int64(limit))
            """) { row in
            ZoneHorizon(user: try row.string(0), container: try row.string(1), environment: try row.string(2), zoneName: try row.string(3),
                        horizon: try row.int64(4), head: try row.int64(5))
        }
        var behindQuery: SQL = """
            SELECT u.name, t.device_name, t.token_id, d.container, d.environment, z.zone_name, p.synced_at
            FROM device_zone_positions p
            JOIN device_tokens t ON t.token_id = p.token_id AND t.revoked_at IS NULL
            JOIN users u ON u.id = t.user_id
            JOIN zones z ON z.id = p.zone_id AND NOT z.deleted
            JOIN databases d ON d.id = z.database_id
            WHERE EXISTS (SELECT 1 FROM records r WHERE r.zone_id = z.id AND r.deleted AND r.change_seq > p.change_seq AND r.modified_at <
            """
        behindQuery.append(cutoff)
        behindQuery.append(") ORDER BY p.synced_at, t.token_id LIMIT \(Int64(limit))")
        let behind = try await pool.query(behindQuery) { row in
            DeviceFallingBehind(user: try row.string(0), deviceName: try row.string(1), tokenID: try row.string(2), container: try row.string(3),
                                environment: try row.string(4), zoneName: try row.string(5), lastSyncAt: try row.date(6))
        }
        return RetentionSummary(types: types, horizons: horizons, devicesFallingBehind: behind)
    }

    /// Records and asset bytes per user, container and environment (the `databases` largest);
    /// asset bytes of the `databases` users storing most; the `assets` largest assets;
    /// unreferenced assets awaiting collection.
    package func storage(databases databaseLimit: Int = 100, assets assetLimit: Int = 20) async throws -> StorageSummary {
        let databases = try await pool.query("""
            WITH r AS (
                SELECT z.database_id, count(*) FILTER (WHERE NOT r.deleted) AS live, count(*) FILTER (WHERE r.deleted) AS dead,
                       COALESCE(sum(pg_column_size(r.fields) + COALESCE(octet_length(r.wire_fields), 0)), 0)::int8 AS bytes
                FROM records r JOIN zones z ON z.id = r.zone_id GROUP BY z.database_id
            ), a AS (
                SELECT database_id, count(*) AS n, COALESCE(sum(size), 0)::int8 AS bytes FROM assets WHERE complete GROUP BY database_id
            )
            SELECT u.name, d.container, d.environment, COALESCE(r.live, 0), COALESCE(r.dead, 0), COALESCE(r.bytes, 0),
                   COALESCE(a.n, 0), COALESCE(a.bytes, 0)
            FROM databases d JOIN users u ON u.id = d.owner_user_id
            LEFT JOIN r ON r.database_id = d.id LEFT JOIN a ON a.database_id = d.id
            ORDER BY COALESCE(r.bytes, 0) + COALESCE(a.bytes, 0) DESC, u.name, d.container, d.environment
            LIMIT \(Int64(databaseLimit))
            """) { row in
            DatabaseStorage(user: try row.string(0), container: try row.string(1), environment: try row.string(2),
                            records: Int(try row.int64(3)), tombstones: Int(try row.int64(4)), recordBytes: try row.int64(5),
                            assets: Int(try row.int64(6)), assetBytes: try row.int64(7))
        }
        let largest = try await pool.query("""
            SELECT u.name, d.container, a.size, a.created_at,
                   (SELECT count(*) FROM asset_references r WHERE r.database_id = a.database_id AND r.sha256 = a.sha256 AND r.size = a.size)
            FROM assets a JOIN databases d ON d.id = a.database_id JOIN users u ON u.id = d.owner_user_id
            WHERE a.complete ORDER BY a.size DESC, a.id LIMIT \(Int64(assetLimit))
            """) { row in
            LargeAsset(user: try row.string(0), container: try row.string(1), size: try row.int64(2), createdAt: try row.date(3),
                        references: Int(try row.int64(4)))
        }
        let quota = try await pool.query("""
            SELECT u.name, sum(a.size)::int8 FROM assets a JOIN databases d ON d.id = a.database_id JOIN users u ON u.id = d.owner_user_id
            WHERE a.complete GROUP BY u.name ORDER BY 2 DESC, 1 LIMIT \(Int64(databaseLimit))
            """) { row in (user: try row.string(0), bytes: try row.int64(1)) }
        let orphans = try await pool.queryFirst("""
            SELECT count(*), COALESCE(sum(a.size), 0)::int8 FROM assets a
            WHERE a.complete AND NOT EXISTS (SELECT 1 FROM asset_references r WHERE r.database_id = a.database_id AND r.sha256 = a.sha256 AND r.size = a.size)
            """, decode: { (Int(try $0.int64(0)), try $0.int64(1)) }) ?? (0, 0)
        return StorageSummary(databases: databases, assetBytesByUser: quota, largestAssets: largest, orphans: orphans.0, orphanBytes: orphans.1)
    }
}

/// A prune that changed the database.
package struct PruneRun: Sendable, Hashable {
    package var finishedAt: Date
    package var records: Int64
    package var tombstones: Int64
    package var assets: Int64
    package var notifications: Int64
    package var seconds: Double
}

extension AdminStore {
    /// The newest prune that changed the database, whoever ran it.
    package func lastPrune() async throws -> PruneRun? {
        try await pool.queryFirst("""
            SELECT finished_at, records, tombstones, assets, notifications, seconds FROM prune_runs ORDER BY id DESC LIMIT 1
            """, decode: { row in
            PruneRun(finishedAt: try row.date(0), records: try row.int64(1), tombstones: try row.int64(2), assets: try row.int64(3),
                     notifications: try row.int64(4), seconds: try row.double(5))
        })
    }
}

extension AdminStore {
    /// Containers with a schema in either environment.
    package func schemaContainers() async throws -> [String] {
        try await pool.query("SELECT DISTINCT container FROM schema_record_types ORDER BY container") { try $0.string(0) }
    }
}
