import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The write that can do everything (deletes, DELETE_SELF cascades, assets, schema additions,
/// subscriptions that fire): one transaction under the zone's row lock, which orders it against
/// every other writer of the zone, so the sequence numbers it assigns follow commit order.
/// It never passes.
struct LockedWrite: RecordWriteStrategy {
    /// `onlyWhere`: a condition on `r` (the records row) checked under the zone lock; operations
    /// on records that fail it are dropped (the pruner deletes only what is still expired).
    var onlyWhere: SQL? = nil
    /// Runs in the transaction after a write that changed something (the console's audit entry).
    var alongside: InTransaction? = nil

    var checksTokenItself: Bool { false }

    func write(_ request: RecordWriteRequest, in store: RecordStore) async throws -> [ModifyResult]? {
        let session = request.session, zoneName = request.zoneName, atomic = request.atomic, limits = request.limits
        let onlyWhere = onlyWhere, alongside = alongside, push = store.database.push, hub = store.hub
        let now = store.clock.nowMilliseconds()
        let (results, events, queuedPushes) = try await store.pool.withTransaction { connection -> ([ModifyResult], [ChangeEvent], Int) in
            // One round trip: the zone's row lock (ordering this write against every other writer of
            // the zone), whether the database has subscriptions, the container's schema, and the
            // operations' records with the targets of their DELETE_SELF references.
            let names = request.operations.compactMap { try? $0.get().recordName }
            let wanted = Array(Set(names).union(RecordStore.deleteSelfTargets(request.operations)))
            let rows = try connection.query("""
                WITH locked AS (
                    SELECT zone_name, id, change_seq, tombstone_horizon_seq, deleted FROM zones
                    WHERE database_id = \(session.databaseID) AND zone_name = \(zoneName) FOR UPDATE
                ), seen AS (
                    SELECT change_seq FROM zones WHERE database_id = \(session.databaseID) AND zone_name = \(zoneName)
                )
                SELECT l.zone_name, l.id, l.change_seq, l.tombstone_horizon_seq, l.deleted,
                       EXISTS (SELECT 1 FROM subscriptions WHERE database_id = \(session.databaseID)),
                       \(SchemaStore.schemaAggregate(container: session.container, environment: session.environment)),
                       (SELECT change_seq FROM seen), \(unsafeColumns: RecordRows.recordColumns)
                FROM locked l LEFT JOIN records r ON r.zone_id = l.id AND r.record_name = ANY(\(PGData.textArray(wanted)))
                """) { row -> (zone: ZoneInfo, hasSubscriptions: Bool, schema: String, seen: Int64, record: Record?) in
                let zone = try ZoneStore.decodeZone(row)
                let record = row.isNull(8) ? nil : try RecordRows.decodeRecord(row, zoneName: zone.name, offset: 8)
                return (zone, try row.bool(5), try row.string(6), try row.int64(7), record)
            }
            let locked = rows.first
            guard let zone = locked?.zone, !zone.deleted else {
                throw SyncError(.zoneNotFound, "Zone \(zoneName) does not exist.")
            }
            var schema = SchemaStore.decodeSchemaAggregate(locked?.schema ?? "[]")
            // The rows come from the statement's snapshot, taken before the lock was granted. Every
            // write bumps the zone's sequence, so equal sequences in the snapshot and under the lock
            // mean no write committed in between; otherwise read the records again, now.
            var existing: [String: Record]
            if locked?.seen == zone.changeSequence {
                existing = Dictionary(rows.compactMap { $0.record.map { ($0.recordName, $0) } }, uniquingKeysWith: { first, _ in first })
            } else {
                existing = try RecordRows.records(connection, zoneID: zone.id, zoneName: zoneName, names: wanted)
            }
            var context = ModifyPlanner.Context(
                zoneName: zoneName, userRecordName: session.userRecordName, deviceID: session.deviceID, now: now,
                baseSequence: zone.changeSequence, environment: session.environment, maxRecordBytes: limits.maxRecordBytes, atomic: atomic)
            var operations = request.operations
            if let onlyWhere {
                var statement: SQL = "SELECT r.record_name FROM records r WHERE r.zone_id = \(zone.id) AND r.record_name = ANY(\(PGData.textArray(names))) AND ("
                statement.append(onlyWhere)
                statement.append(")")
                let eligible = Set(try connection.query(statement) { try $0.string(0) })
                operations = operations.filter { (try? $0.get()).map { eligible.contains($0.recordName) } ?? false }
            }
            // Assets named in the request that exist in this database, for checking receipts.
            let mentioned = RecordStore.assetCandidates(operations)
            let stored = try AssetStore.existingAssets(connection, databaseID: session.databaseID, candidates: mentioned)
            let signer = store.assets
            let databaseID = session.databaseID
            context.assetCheck = { asset in
                if let problem = signer.receiptProblem(asset, databaseID: databaseID) { return problem }
                guard stored.contains("\(asset.fileChecksum)/\(asset.size)") else {
                    return "the asset \(asset.fileChecksum) is no longer stored; upload it again."
                }
                return nil
            }
            let planner = ModifyPlanner(context: context)
            var plan = planner.plan(operations, existing: existing, schema: schema)

            // The development schema learns new fields under the types' row locks; a field typed
            // differently by a concurrent request means this plan is stale: plan again.
            if !plan.schemaAdditions.isEmpty {
                guard session.environment == .development else { throw SyncError(.badRequest, "The production schema cannot change by saving.") }
                let conflicts = try SchemaStore.addToSchema(connection, container: session.container, environment: session.environment,
                                                     additions: plan.schemaAdditions)
                if !conflicts.isEmpty {
                    schema = try SchemaStore.loadSchema(connection, container: session.container, environment: session.environment)
                    plan = planner.plan(operations, existing: existing, schema: schema)
                    if !plan.schemaAdditions.isEmpty {
                        let again = try SchemaStore.addToSchema(connection, container: session.container,
                                                         environment: session.environment, additions: plan.schemaAdditions)
                        guard again.isEmpty else {
                            throw SyncError(.tryAgainLater, "The schema changed during this request; retry it.", retryAfter: 1)
                        }
                    }
                }
            }

            var cascaded: [String: Record] = [:]
            if !plan.deletedNames.isEmpty {
                let handled = plan.writes.map { write -> String in
                    switch write {
                    case .save(let record, _, _, _): record.recordName
                    case .delete(let name, _, _): name
                    }
                }
                let doomed = try Self.cascadeTargets(connection, zoneID: zone.id, zoneName: zoneName, deleted: plan.deletedNames, exclude: handled)
                plan.addCascade(doomed.map { ($0.recordName, $0.recordType) })
                cascaded = Dictionary(doomed.map { ($0.recordName, $0) }, uniquingKeysWith: { first, _ in first })
            }
            guard plan.hasWrites else { return (plan.results, [], 0) }
            var events = [ChangeEvent(databaseID: session.databaseID, kind: .records, zoneID: zone.id, sequence: plan.lastSequence)]
            try Self.write(plan, connection: connection, zoneID: zone.id, session: session, now: now,
                           previous: PreviousState(plan, existing: existing, cascaded: cascaded))
            // Notifications commit with the change that fires them, or not at all.
            var queuedPushes = 0
            if locked?.hasSubscriptions == true {
                let subscriptions = try SubscriptionStore.loadSubscriptions(connection, databaseID: session.databaseID, schema: schema, limits: limits)
                var fired = SubscriptionStore.notifications(for: plan, subscriptions: subscriptions, existing: existing, cascaded: cascaded, zoneName: zoneName)
                if !fired.spent.isEmpty {
                    // firesOnce: only the transaction that deletes the subscription fires it. The
                    // DELETE waits for a concurrent writer holding the row and then finds it gone.
                    let deleted = Set(try connection.query("""
                        DELETE FROM subscriptions WHERE database_id = \(session.databaseID) AND subscription_id = ANY(\(PGData.textArray(fired.spent)))
                        RETURNING subscription_id
                        """) { try $0.string(0) })
                    fired.rows.removeAll { $0.subscription.firesOnce && !deleted.contains($0.subscription.id) }
                    fired.spent = []
                }
                if !fired.rows.isEmpty {
                    let newest = try Self.writeNotifications(fired.rows, spent: fired.spent, connection: connection, session: session)
                    // Their pushes commit with them (docs/push.md "Registrations and the outbox").
                    if push.isOn, push.topics[session.container] != nil {
                        queuedPushes = try PushOutbox.enqueue(connection, written: PushOutbox.written(fired.rows, newest: newest), session: session,
                                                              now: now, limits: limits,
                                                              isParked: { hub.isParked(tokenID: $0, databaseID: session.databaseID) })
                    }
                    events.append(ChangeEvent(databaseID: session.databaseID, kind: .notifications, sequence: newest))
                }
            }
            try alongside?(connection)
            return (plan.results, events, queuedPushes)
        }
        // Committed: wake this instance's waiters now, and the other instances' through NOTIFY.
        store.announce(events)
        store.database.pushCounters.queued(queuedPushes)
        return results
    }

}
