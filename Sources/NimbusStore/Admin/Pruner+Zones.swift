import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The pruner's zone queries: which zones have expired records or old tombstones, each with a
/// session to delete through.
extension Pruner {
    struct PruneZone: Sendable {
        var id: Int64
        var name: String
        var container: String
        var environment: String
        var owner: String
        var session: Session
    }

    /// The one rule of which records expire: the record types that can, each with its retention
    /// field and cutoff (milliseconds since the epoch), for a zone of database `d` — a relation that
    /// the zone probe, the per-zone candidate rules and the per-record check all read. A type
    /// expires under its schema's `retention_days`, or under `olderThanSeconds` when given (the
    /// types named, with a schema row or not, else the types that have a policy). A record of it is
    /// expired when its retention start (`retentionStart`: the earlier of `created` and the type's
    /// retention field, so a future-dated event cannot live forever) is past the cutoff (`expired`);
    /// a policy imported later applies to records saved before.
    static func expiringTypes(_ options: PruneOptions, now: Int64) -> SQL {
        var types: SQL
        if let seconds = options.olderThanSeconds, !options.recordTypes.isEmpty {
            // Exactly the types named, with a schema row or not.
            types = """
                SELECT t.record_type, s.retention_field, \(now - seconds * 1000)::int8 AS cutoff
                FROM unnest(\(PGData.textArray(options.recordTypes))::text[]) AS t(record_type)
                LEFT JOIN schema_record_types s ON s.container = d.container AND s.environment = d.environment AND s.record_type = t.record_type
                """
        } else {
            let cutoff: SQL = options.olderThanSeconds.map { "\(now - $0 * 1000)::int8" } ?? "\(now)::int8 - s.retention_days::int8 * 86400000"
            types = "SELECT s.record_type, s.retention_field, "
            types.append(cutoff)
            types.append("""
                 AS cutoff FROM schema_record_types s
                WHERE s.container = d.container AND s.environment = d.environment AND s.retention_days IS NOT NULL
                """)
            if !options.recordTypes.isEmpty { types.append(" AND s.record_type = ANY(\(PGData.textArray(options.recordTypes)))") }
        }
        return types
    }

    /// The zone query of the expiry phase: zones with a live record of an expiring type past its
    /// cutoff (`expired`). Each type is probed through
    /// `records_live_by_type`, so records of types without a policy are never read: a condition
    /// with the schema join evaluated for every live record kept a core busy for minutes on a
    /// zone of a million records without any policy, every time the scheduled job ran.
    static func zonesWithExpiredRecordsStatement(_ options: PruneOptions, now: Int64) -> SQL {
        // One probe per expiring type through records_live_by_type: LATERAL … LIMIT 1 keeps the
        // planner from joining all of the zone's records by type, and ORDER BY record_name (the
        // index's order) from a sequential scan it expects to hit a match early (it guesses a
        // third of a zone's records of a type are expired; with none, it read them all).
        var probe: SQL = "SELECT 1 FROM ("
        probe.append(expiringTypes(options, now: now))
        probe.append(") k, LATERAL (SELECT 1 FROM records r WHERE r.zone_id = z.id AND NOT r.deleted AND ")
        probe.append(expiredUnderItsType(options))
        probe.append(" ORDER BY r.record_name LIMIT 1) hit")
        return zoneQuery(container: options.container, having: probe)
    }

    /// Whether a record whose retention start is `start` is expired at `cutoff` (milliseconds since
    /// the epoch): at or before it under a policy, strictly before it for `olderThanSeconds`.
    static func expired(_ start: SQL, cutoff: SQL, _ options: PruneOptions) -> SQL {
        var sql = start
        sql.append(options.olderThanSeconds == nil ? " <= " : " < ")
        sql.append("'epoch'::timestamptz + ")
        sql.append(cutoff)
        sql.append(" * interval '1 millisecond'")
        return sql
    }

    /// Whether record `r` is of expiring type `k` (a row of `expiringTypes`) and past its cutoff.
    private static func expiredUnderItsType(_ options: PruneOptions) -> SQL {
        var sql: SQL = "r.record_type = k.record_type AND "
        sql.append(expired(retentionStart(field: "k.retention_field"), cutoff: "k.cutoff", options))
        return sql
    }

    /// Whether live record `r` is expired: `expiringTypes` for that one record, which the locked
    /// delete re-checks under the zone's lock.
    static func expiryCondition(_ options: PruneOptions, now: Int64) -> SQL {
        var condition: SQL = "EXISTS (SELECT 1 FROM zones z JOIN databases d ON d.id = z.database_id CROSS JOIN LATERAL ("
        condition.append(expiringTypes(options, now: now))
        condition.append(") k WHERE z.id = r.zone_id AND ")
        condition.append(expiredUnderItsType(options))
        condition.append(")")
        return condition
    }

    /// One record type's expiry in a zone (a row of `expiringTypes`).
    struct ExpiryRule: Sendable {
        var recordType: String
        /// Milliseconds since the epoch.
        var cutoff: Int64
        var retentionField: String?

        /// The live records `r` of zone `zoneID` this rule finds expired (through `records_live_by_type`).
        func expiredRecords(inZone zoneID: Int64, _ options: PruneOptions) -> SQL {
            let start: SQL = retentionField.map { Pruner.retentionStart(field: "\($0)") } ?? "r.created_at"
            var sql: SQL = "r.zone_id = \(zoneID) AND r.record_type = \(recordType) AND NOT r.deleted AND "
            sql.append(Pruner.expired(start, cutoff: "\(cutoff)", options))
            return sql
        }
    }

    /// `expiringTypes` of `zone`'s database, in the order of their names: the candidates' rules.
    func expiryRules(_ zone: PruneZone, options: PruneOptions, now: Int64) async throws -> [ExpiryRule] {
        var statement: SQL = "SELECT k.record_type, k.retention_field, k.cutoff FROM databases d CROSS JOIN LATERAL ("
        statement.append(Self.expiringTypes(options, now: now))
        statement.append(") k WHERE d.id = \(zone.session.databaseID) ORDER BY k.record_type")
        let rules = statement
        return try await pool.withConnection { connection in
            try connection.query(rules) { ExpiryRule(recordType: try $0.string(0), cutoff: try $0.int64(2), retentionField: try $0.optionalString(1)) }
        }
    }

    func zonesWithExpiredRecords(_ options: PruneOptions, now: Int64) async throws -> [PruneZone] {
        try await zones(Self.zonesWithExpiredRecordsStatement(options, now: now))
    }

    /// Zones that have rows matching `condition` (tombstones included), with a session to delete
    /// through (the pruner acts as device `nimbus-prune`, so every device is notified of its deletions).
    func zonesWithRecords(matching condition: SQL, container: String?) async throws -> [PruneZone] {
        var rows: SQL = "SELECT 1 FROM records r WHERE r.zone_id = z.id AND ("
        rows.append(condition)
        rows.append(")")
        return try await zones(Self.zoneQuery(container: container, having: rows))
    }

    /// The live zones (of `container` when given) for which `subquery` (over zone `z` and its
    /// database `d`) finds a row, in the columns `zones` reads.
    private static func zoneQuery(container: String?, having subquery: SQL) -> SQL {
        var sql: SQL = """
            SELECT z.id, z.zone_name, d.container, d.environment, u.name, u.id, u.record_name, d.id
            FROM zones z JOIN databases d ON d.id = z.database_id JOIN users u ON u.id = d.owner_user_id
            WHERE NOT z.deleted
            """
        if let container { sql.append(" AND d.container = \(container)") }
        sql.append(" AND EXISTS (")
        sql.append(subquery)
        sql.append(") ORDER BY d.container, u.name, z.zone_name")
        return sql
    }

    /// The zones a `zoneQuery` lists, each with its session.
    private func zones(_ statement: SQL) async throws -> [PruneZone] {
        try await pool.withConnection { connection in
            try connection.query(statement) { row in
                let environment = Environment(rawValue: try row.string(3)) ?? .development
                return PruneZone(id: try row.int64(0), name: try row.string(1), container: try row.string(2), environment: try row.string(3),
                                 owner: try row.string(4),
                                 session: Session(userID: try row.int64(5), userRecordName: try row.string(6), tokenID: "",
                                                  deviceID: "nimbus-prune", databaseID: try row.int64(7), container: try row.string(2),
                                                  environment: environment))
            }
        }
    }
}
