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

    func attempt(_ request: inout RecordWriteRequest, in store: RecordStore) async throws -> [ModifyResult]? {
        try await write(request, in: store)
    }

    /// Writes the request (it never passes; optional for the strategies' sake).
    func write(_ request: RecordWriteRequest, in store: RecordStore) async throws -> [ModifyResult]? {
        let session = request.session, zoneName = request.zoneName, atomic = request.atomic, limits = request.limits
        let onlyWhere = onlyWhere, alongside = alongside, push = store.database.push, hub = store.hub
        // A plan handed on is written with the time it was made with.
        let now = request.handedPlan?.now ?? store.clock.nowMilliseconds()
        let (results, events, queuedPushes) = try await store.pool.withTransaction { connection -> ([ModifyResult], [ChangeEvent], Int) in
            // One round trip: the zone's row lock (ordering this write against every other writer of
            // the zone), whether the database has subscriptions, the container's schema, and the
            // operations' records with the targets of their DELETE_SELF references.
            let names = request.operations.compactMap { try? $0.get().recordName }
            let wanted = Array(Set(names).union(RecordStore.deleteSelfTargets(request.operations)))
            let read = try FirstRead.read(connection, session: session, zoneName: zoneName, names: wanted, locking: true)
            let zone = read.zone, existing = read.existing
            var schema = read.schema
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
            // The plan a strategy handed on, if the read under the lock shows what it was made
            // against (never with `onlyWhere`, which drops operations).
            var plan = (onlyWhere == nil ? request.handedPlan?.plan(for: read) : nil)
                ?? planner.plan(operations, existing: existing, schema: schema)

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
            if read.hasSubscriptions {
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
