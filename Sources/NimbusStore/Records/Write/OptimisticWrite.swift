import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The strategy for plain saves (see `modifyOptimistically`); it passes when the request needs
/// the locked write.
struct OptimisticWrite: RecordWriteStrategy {
    var checksTokenItself: Bool { false }

    func attempt(_ request: inout RecordWriteRequest, in store: RecordStore) async throws -> [ModifyResult]? {
        switch try await modifyOptimistically(request, in: store) {
        case .done(let results, let event):
            if let event { store.announce([event]) }
            return results
        case .locked(let planned):
            request.handedPlan = planned ?? request.handedPlan
            return nil
        }
    }
}

extension OptimisticWrite {
    enum Outcome: Sendable {
        case done([ModifyResult], ChangeEvent?)
        /// The request needs the locked path (deletes, references, assets, schema additions,
        /// subscriptions), with the plan made for it, if one was made.
        case locked(HandedPlan?)
    }

    /// The fast path of `records/modify` for plain saves: read without the zone lock, plan (or
    /// take the plan handed on, `HandedPlan`), then
    /// one autocommit statement that takes the zone lock, assigns the sequences, and applies the
    /// saves only if no record changed since the read (a row changed since then has a sequence
    /// above the one read; `ON CONFLICT ... WHERE` sees the latest version). Otherwise the
    /// statement aborts whole with 40001 and the read is retried. The zone lock is held for that
    /// one statement and its commit only, as in the reference workload.
    func modifyOptimistically(_ request: RecordWriteRequest, in store: RecordStore) async throws -> Outcome {
        let operations = request.operations
        guard RecordStore.deleteSelfTargets(operations).isEmpty, RecordStore.assetCandidates(operations).isEmpty,
              !operations.contains(where: { (try? $0.get())?.kind.isDeleteKind ?? false }) else { return .locked(nil) }
        let now = store.clock.nowMilliseconds(), caches = store.caches
        for _ in 0..<4 {
            do {
                let outcome = try await store.database.rawPool.withConnection(on: store.execution) { connection -> Outcome in
                    try self.attemptOptimisticWrite(connection, request, caches: caches, now: now)
                }
                return outcome
            } catch let error as PGError where error.sqlState == PGError.SQLState.serializationFailure {
                continue  // a record (or the zone) changed since the read: read again
            } catch {
                throw StorePool.domainError(error)
            }
        }
        return .locked(nil)
    }

    private func attemptOptimisticWrite(_ connection: PGConnection, _ request: RecordWriteRequest, caches: WriteCaches,
                                        now planningTime: Int64) throws -> Outcome {
        let session = request.session, zoneName = request.zoneName, operations = request.operations
        let atomic = request.atomic, limits = request.limits
        let zoneKey = WriteCaches.ZoneKey(databaseID: session.databaseID, zoneName: zoneName)
        let read: FirstRead
        do {
            read = try FirstRead.read(connection, session: session, zoneName: zoneName,
                                      names: operations.compactMap { try? $0.get().recordName }, locking: false)
        } catch let error as SyncError where error.code == .zoneNotFound {
            caches.forgetZone(zoneKey)
            throw error
        }
        let zone = read.zone, existing = read.existing
        caches.remember(zoneID: zone.id, for: zoneKey)
        caches.remember(WriteCaches.CachedSchema(version: read.schemaVersion, types: read.schema),
                        for: WriteCaches.SchemaKey(container: session.container, environment: session.environment))
        if read.hasSubscriptions { return .locked(nil) }  // a plan handed to this one stays handed on
        var now = planningTime
        var plan: ModifyPlan
        if let handed = request.handedPlan, let taken = handed.plan(for: read) {
            plan = taken
            now = handed.now
        } else {
            let context = ModifyPlanner.Context(
                zoneName: zoneName, userRecordName: session.userRecordName, deviceID: session.deviceID, now: now,
                baseSequence: zone.changeSequence, environment: session.environment, maxRecordBytes: limits.maxRecordBytes, atomic: atomic)
            plan = ModifyPlanner(context: context).plan(operations, existing: existing, schema: read.schema)
        }
        let previous = LockedWrite.PreviousState(plan, existing: existing, cascaded: [:])
        let plainSaves = plan.writes.allSatisfy { write in
            if case .save(let record, _, let targets, _) = write {
                return targets.isEmpty && !record.fields.values.contains { $0.hasAssets }
            }
            return false
        }
        guard plainSaves, plan.schemaAdditions.isEmpty, !previous.hadEdges, !previous.hadAssets else {
            return .locked(HandedPlan(plan: plan, baseSequence: zone.changeSequence, now: now, schemaVersion: read.schemaVersion,
                                      rows: .asOf(zoneID: zone.id, sequence: zone.changeSequence)))
        }
        guard plan.hasWrites else { return .done(plan.results, nil) }

        var names2: [String] = [], types: [String] = [], fields: [String] = [], created: [Int64] = []
        var createdBy: [String] = [], createdUsers: [String] = [], expires: [Int64] = []
        for case .save(let record, _, _, let expiresAt) in plan.writes {
            names2.append(record.recordName)
            types.append(record.recordType)
            fields.append(Record.storage(of: record.fields).text)   // the wire form: plain saves hold no assets
            created.append(record.created.timestamp)
            createdBy.append(record.created.deviceID)
            createdUsers.append(record.created.userRecordName)
            expires.append(expiresAt ?? Int64.min)
        }
        let count = Int64(names2.count)
        let base = try connection.queryFirst("""
            WITH z AS (
                UPDATE zones SET change_seq = change_seq + \(count) WHERE id = \(zone.id) AND NOT deleted
                RETURNING change_seq - \(count) AS base
            ), saved AS (
                INSERT INTO records (\(unsafeColumns: RecordRows.insertColumns))
                SELECT \(zone.id), u.n, u.t, u.f::jsonb, u.f, z.base + u.ord, z.base + u.ord,
                       'epoch'::timestamptz + u.c * interval '1 millisecond', u.cd, u.cu,
                       'epoch'::timestamptz + \(now) * interval '1 millisecond', \(session.deviceID), \(session.userRecordName),
                       false, 'epoch'::timestamptz + NULLIF(u.e, \(Int64.min)) * interval '1 millisecond'
                FROM z, unnest(\(PGData.textArray(names2)), \(PGData.textArray(types)), \(PGData.textArray(fields)),
                               \(PGData.int64Array(created)), \(PGData.textArray(createdBy)), \(PGData.textArray(createdUsers)),
                               \(PGData.int64Array(expires))) WITH ORDINALITY AS u(n, t, f, c, cd, cu, e, ord)
                ON CONFLICT (zone_id, record_name) DO UPDATE SET \(unsafeColumns: RecordRows.upsertAssignments)
                    -- Only a row unchanged since the read (its sequence at most the one read).
                    WHERE records.change_seq <= \(zone.changeSequence)
                RETURNING 1
            )
            SELECT (SELECT base FROM z), nimbus_retry(\(count), (SELECT count(*) FROM saved))
            """) { try $0.int64(0) }
        guard let base else { throw PGError(.server, "the zone changed", sqlState: PGError.SQLState.serializationFailure) }

        // The sequences were assigned in the statement: give the answers their tags.
        var sequence = base
        var tags: [String: String] = [:]
        for case .save(let record, _, _, _) in plan.writes {
            sequence += 1
            tags[record.recordName] = ChangeTag.make(sequence: sequence)
        }
        plan.results = plan.results.map { result in
            guard case .saved(var record, let keys) = result, let tag = tags[record.recordName] else { return result }
            record.changeTag = tag
            return .saved(record, desiredKeys: keys)
        }
        return .done(plan.results, ChangeEvent(databaseID: session.databaseID, kind: .records, zoneID: zone.id, sequence: base + count))
    }
}

extension RecordOperation.Kind {
    var isDeleteKind: Bool { self == .delete || self == .forceDelete }
}
