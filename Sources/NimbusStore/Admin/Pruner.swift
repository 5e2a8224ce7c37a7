import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// What `prune` does (docs/architecture.md "Retention"; issue: `nimbus prune`).
package struct PruneOptions: Sendable {
    /// Prune records whose retention start (the earlier of `created` and the type's retention
    /// field) is older than this; nil: use each type's schema retention (`expires_at`).
    package var olderThanSeconds: Int64?
    /// Only these record types (with `olderThanSeconds`: exactly these, even without a policy).
    package var recordTypes: [String] = []
    package var container: String?
    /// Expire tombstones modified longer ago than this (raising zone horizons).
    package var tombstonesOlderThanSeconds: Int64 = 90 * 86_400
    package var assetGraceSeconds: Int64 = 86_400
    package var notificationRetentionSeconds: Int64 = 7 * 86_400
    package var dryRun = false
    /// Records per transaction: short transactions keep writers and readers moving.
    package var batchSize = 500

    package init() {}
}

/// Counts for one (container, environment, zone, record type).
package struct PruneCount: Sendable, Hashable {
    package var container: String
    package var environment: String
    package var owner: String
    package var zoneName: String
    package var recordType: String
    package var records = 0
    package var tombstones = 0
}

package struct PruneReport: Sendable {
    package var counts: [PruneCount] = []
    package var assets = 0
    package var assetBytes: Int64 = 0
    package var notifications = 0
    /// Push delivery log entries older than the notification retention period.
    package var pushLogEntries = 0
    package var seconds = 0.0
}

/// Retention: removes expired records, old tombstones and change history, and unreferenced assets.
package struct Pruner: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded {
        // The stores it calls run as it does.
        didSet { records = records.on(execution); assets = assets.on(execution) }
    }
    /// Expired records go through its `LockedWrite`.
    var records: RecordStore
    /// Collects unreferenced assets.
    var assets: AssetStore
}

extension Pruner {
    static let pruneLockKey: Int64 = 0x4E494D4255535F50  // "NIMBUS_P"

    /// Runs the pruner unless another instance holds its advisory lock (`wait` false) or after
    /// it (`wait` true). Returns nil when skipped.
    ///
    /// The lock is a transaction-level advisory lock in a transaction held open for the run
    /// (which itself works on other connections): it ends with its transaction whatever happens,
    /// and a transaction pooler keeps the transaction on one server connection.
    package func prune(_ options: PruneOptions, limits: Limits = Limits(), wait: Bool = false,
                       progress: @escaping @Sendable (String) -> Void = { _ in }) async throws -> PruneReport? {
        try await pool.withLease { lease in
            let locked = try await lease.run { connection in
                // The primary only: a standby (a failover in progress) is a transient error.
                try connection.requirePrimary()
                try connection.run("BEGIN")
                let locked = wait ? (try connection.queryFirst("SELECT pg_advisory_xact_lock(\(Self.pruneLockKey)) IS NOT NULL") { try $0.bool(0) } ?? false)
                                  : (try connection.queryFirst("SELECT pg_try_advisory_xact_lock(\(Self.pruneLockKey))") { try $0.bool(0) } ?? false)
                if !locked { try connection.run("ROLLBACK") }
                return locked
            }
            guard locked else { return nil }
            do {
                let report = try await runPrune(options, limits: limits, progress: progress)
                let records = report.counts.reduce(0) { $0 + $1.records }, tombstones = report.counts.reduce(0) { $0 + $1.tombstones }
                let dryRun = options.dryRun
                _ = try await lease.run { connection in
                    if !dryRun {
                        try connection.run("""
                            INSERT INTO prune_runs (finished_at, records, tombstones, assets, notifications, seconds)
                            VALUES (clock_timestamp(), \(Int64(records)), \(Int64(tombstones)), \(Int64(report.assets)), \(Int64(report.notifications)), \(report.seconds))
                            """)
                    }
                    try connection.run("COMMIT")
                }
                return report
            } catch {
                // A connection still inside the transaction is dropped by the pool on return.
                _ = try? await lease.run { try $0.run("ROLLBACK") }
                throw error
            }
        }
    }

    private func runPrune(_ options: PruneOptions, limits: Limits, progress: @escaping @Sendable (String) -> Void) async throws -> PruneReport {
        let start = monotonicNanoseconds()
        let now = clock.nowMilliseconds()
        var report = PruneReport()
        var counts: [String: PruneCount] = [:]
        var done = 0
        var lastProgress = start

        // 1. Expired records, zone by zone, in batches through the normal delete path
        //    (tombstones, DELETE_SELF cascades, delete notifications, NOTIFY).
        let condition = Self.expiryCondition(options, now: now)
        // The rules depend on the zone's container and environment only: read once per pair, not
        // once per zone (10,000 identical statements a run at 10,000 users).
        var rulesBySchema: [String: [ExpiryRule]] = [:]
        for zone in try await zonesWithExpiredRecords(options, now: now) {
            let session = zone.session
            // Candidates are found type by type through the live-records index (`records_live_by_type`),
            // with the type's rule written out: a scan of the zone that evaluated the schema join
            // for every live row took minutes once the expired records were gone and only fresh
            // ones were left to pass over. The delete re-checks `condition` under the zone's lock.
            let schemaKey = "\(zone.container)|\(zone.environment)"
            let rules: [ExpiryRule]
            if let known = rulesBySchema[schemaKey] {
                rules = known
            } else {
                rules = try await expiryRules(zone, options: options, now: now)
                rulesBySchema[schemaKey] = rules
            }
            if options.dryRun {
                for rule in rules {
                    var count: SQL = "SELECT count(*)::int8 FROM records r WHERE "
                    count.append(rule.expiredRecords(inZone: zone.id, options))
                    let statement = count
                    let number = try await pool.withConnection { try $0.queryFirst(statement) { try $0.int(0) } } ?? 0
                    guard number > 0 else { continue }
                    let key = "\(zone.container)|\(zone.environment)|\(zone.owner)|\(zone.name)|\(rule.recordType)"
                    counts[key, default: PruneCount(container: zone.container, environment: zone.environment, owner: zone.owner,
                                                    zoneName: zone.name, recordType: rule.recordType)].records += number
                }
                continue
            }
            for rule in rules {
                // Batches continue after the last name seen, so no batch rescans what earlier ones
                // turned into tombstones (linear, not quadratic, in the zone's size).
                var after = ""
                while true {
                    var select: SQL = "SELECT r.record_name FROM records r WHERE "
                    select.append(rule.expiredRecords(inZone: zone.id, options))
                    select.append(" AND r.record_name > \(after) ORDER BY r.record_name LIMIT \(Int64(options.batchSize))")
                    let statement = select
                    let batch = try await pool.withConnection { try $0.query(statement) { try $0.string(0) } }
                    if batch.isEmpty { break }
                    after = batch.last ?? after
                    let batchStart = monotonicNanoseconds()
                    let operations = batch.map { Result<RecordOperation, ItemError>.success(RecordOperation(kind: .forceDelete, recordName: $0)) }
                    // Under the zone lock, only records still expired are deleted.
                    let request = RecordWriteRequest(session: session, zoneName: zone.name, operations: operations, atomic: false, limits: limits)
                    let results = try await LockedWrite(onlyWhere: condition).write(request, in: records) ?? []
                    let deleted = results.reduce(0) { count, result in if case .deleted = result { count + 1 } else { count } }
                    let key = "\(zone.container)|\(zone.environment)|\(zone.owner)|\(zone.name)|\(rule.recordType)"
                    counts[key, default: PruneCount(container: zone.container, environment: zone.environment, owner: zone.owner,
                                                    zoneName: zone.name, recordType: rule.recordType)].records += deleted
                    done += deleted
                    if monotonicNanoseconds() - lastProgress > 2_000_000_000 {
                        lastProgress = monotonicNanoseconds()
                        progress("pruned \(done) records so far (zone \(zone.name) of \(zone.owner), \(zone.container))")
                    }
                    if batch.count < options.batchSize { break }
                    // Leave the zone to its writers for as long as the batch held it (at most 50 ms):
                    // pruning takes at most about half of the zone's lock time.
                    let held = monotonicNanoseconds() - batchStart
                    try? await Task.sleep(nanoseconds: min(held, 50_000_000))
                }
            }
        }

        // 2. Tombstones past their retention: deleted for good, raising each zone's horizon so
        //    that older tokens get CHANGE_TOKEN_EXPIRED instead of a list missing deletions.
        let cutoff = now - options.tombstonesOlderThanSeconds * 1000
        let tombstoneCondition: SQL = "r.deleted AND r.modified_at < 'epoch'::timestamptz + \(cutoff) * interval '1 millisecond'"
        for zone in try await zonesWithRecords(matching: tombstoneCondition, container: options.container) {
            while true {
                let zoneID = zone.id, batchSize = Int64(options.batchSize), dryRun = options.dryRun
                let removed = try await pool.withTransaction { connection -> [(String, Int)] in
                    try connection.run("SELECT 1 FROM zones WHERE id = \(zoneID) FOR UPDATE")
                    if dryRun {
                        return try connection.query("""
                            SELECT r.record_type, count(*)::int8 FROM records r WHERE r.zone_id = \(zoneID) AND \(tombstoneCondition) GROUP BY r.record_type
                            """) { (try $0.string(0), try $0.int(1)) }
                    }
                    return try connection.query("""
                        WITH gone AS (
                            DELETE FROM records WHERE zone_id = \(zoneID) AND record_name IN (
                                SELECT r.record_name FROM records r WHERE r.zone_id = \(zoneID) AND \(tombstoneCondition) LIMIT \(batchSize))
                            RETURNING record_type, change_seq
                        ), horizon AS (
                            UPDATE zones SET tombstone_horizon_seq = GREATEST(tombstone_horizon_seq, (SELECT max(change_seq) FROM gone))
                            WHERE id = \(zoneID) AND EXISTS (SELECT 1 FROM gone)
                            RETURNING 1
                        )
                        SELECT record_type, count(*)::int8 FROM gone GROUP BY record_type
                        """) { (try $0.string(0), try $0.int(1)) }
                }
                for (type, count) in removed {
                    let key = "\(zone.container)|\(zone.environment)|\(zone.owner)|\(zone.name)|\(type)"
                    counts[key, default: PruneCount(container: zone.container, environment: zone.environment, owner: zone.owner,
                                                    zoneName: zone.name, recordType: type)].tombstones += count
                }
                let total = removed.reduce(0) { $0 + $1.1 }
                if dryRun || total < options.batchSize { break }
            }
        }

        // 3. Unreferenced assets after their grace period; 4. old notifications.
        let assets = try await assets.collectUnreferencedAssets(graceSeconds: options.assetGraceSeconds, dryRun: options.dryRun,
                                                         container: options.container)
        report.assets = assets.count
        report.assetBytes = assets.bytes
        let notificationCutoff = now - options.notificationRetentionSeconds * 1000
        report.notifications = try await pool.withConnection { connection in
            var condition: SQL = "created_at < 'epoch'::timestamptz + \(notificationCutoff) * interval '1 millisecond'"
            if let container = options.container {
                condition.append(" AND database_id IN (SELECT id FROM databases WHERE container = \(container))")
            }
            return options.dryRun
                ? try connection.queryFirst("SELECT count(*)::int8 FROM notifications WHERE \(condition)") { try $0.int(0) } ?? 0
                : try connection.run("DELETE FROM notifications WHERE \(condition)")
        }
        // 5. The push delivery log, kept as long as notifications (queued pushes went with theirs).
        if !options.dryRun {
            report.pushLogEntries = try await pushLog.prune(olderThan: notificationCutoff, container: options.container)
            _ = try await pushLog.removeRevokedRegistrations()
            _ = try await pushLog.removeEndedLongPolls(before: clock.nowMilliseconds() - 3_600_000)
        }
        report.counts = counts.values.sorted { ($0.container, $0.owner, $0.zoneName, $0.recordType) < ($1.container, $1.owner, $1.zoneName, $1.recordType) }
        report.seconds = Double(monotonicNanoseconds() - start) / 1e9
        return report
    }

    /// The earlier of `created_at` and the retention field's time (`s` is the type's schema row).
    static let retentionStart = retentionStart(field: "s.retention_field")

    /// The earlier of `created_at` and the time in the record's field named by `field` (text, NULL
    /// for none) when that field is a TIMESTAMP.
    static func retentionStart(field: SQL) -> SQL {
        """
        LEAST(r.created_at, CASE WHEN \(field) IS NOT NULL AND r.fields->\(field)->>'type' = 'TIMESTAMP'
            THEN 'epoch'::timestamptz + (r.fields->\(field)->>'value')::int8 * interval '1 millisecond' ELSE r.created_at END)
        """
    }
}
