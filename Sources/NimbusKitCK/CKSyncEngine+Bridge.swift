import Foundation

/// NimbusKit's engine delegate that turns its callbacks into `CKSyncEngine` events and asks the
/// app's `nextRecordZoneChangeBatch` for the records of pulled saves.
final class CKSyncEngineBridge: SyncEngineDelegate, @unchecked Sendable {
    // Safe: `syncEngine` is set once right after init; the rest is under `lock`.
    weak var syncEngine: CKSyncEngine?
    private struct Shared {
        var reason: CKSyncEngine.SyncReason = .scheduled
        var options = CKSyncEngine.SendChangesOptions()
        /// Conflicts of the round being sent, reported as failed saves (Apple's behaviour).
        var conflicts: [RecordID: Conflict] = [:]
    }
    private let lock = Locked(Shared())

    func setReason(_ reason: CKSyncEngine.SyncReason, options: CKSyncEngine.SendChangesOptions) {
        lock.withLock {
            $0.reason = reason
            $0.options = options
        }
    }

    func syncEngine(_ engine: SyncEngine, apply changes: FetchedChanges) async throws {
        guard let ck = syncEngine else {
            throw NimbusError(.internalError, reason: "The CKSyncEngine is gone: the changes are fetched again next time.")
        }
        let zoneID = CKRecordZone.ID(changes.zoneID)
        await ck.emit(.willFetchRecordZoneChanges(.init(zoneID: zoneID)))
        switch changes.reason {
        case .zoneDeleted:
            await ck.emit(.fetchedDatabaseChanges(.init(modifications: [], deletions: [.init(zoneID: zoneID, reason: .deleted)])))
        case .changes, .tokenReset:
            let database = try? ck.database.nimbusDatabase()
            await ck.emit(.fetchedRecordZoneChanges(.init(
                modifications: changes.modified.map { .init(record: CKRecord(record: $0, database: database)) },
                deletions: changes.deleted.map { .init(recordID: CKRecord.ID($0), recordType: "") })))
        }
        await ck.emit(.didFetchRecordZoneChanges(.init(zoneID: zoneID, error: nil)))
    }

    func syncEngine(_ engine: SyncEngine, resolve conflict: Conflict) async -> ConflictResolution {
        // CloudKit's engine does not merge: the app gets serverRecordChanged with the server
        // record in sentRecordZoneChanges and decides there.
        lock.withLock { $0.conflicts[conflict.local.id] = conflict }
        return .useServer
    }

    func syncEngine(_ engine: SyncEngine, didSend changes: SentChanges) async {
        guard let ck = syncEngine else { return }
        if changes.hasZoneChanges { await reportZones(changes, to: ck) }
        if changes.hasRecordChanges { await reportRecords(changes, engine: engine, to: ck) }
        // Apple's engine drops failed changes after reporting them; the app adds them again.
        if !changes.failed.isEmpty || !changes.failedZones.isEmpty { try? await engine.discardFailed() }
        await ck.state.refresh()
        await ck.emit(.stateUpdate(.init(stateSerialization: ck.state.serialization)))
    }

    /// Zone changes sent: `sentDatabaseChanges`.
    private func reportZones(_ changes: SentChanges, to ck: CKSyncEngine) async {
        var failedSaves: [CKSyncEngine.Event.SentDatabaseChanges.FailedZoneSave] = []
        var failedDeletes: [CKRecordZone.ID: CKError] = [:]
        for failed in changes.failedZones {
            let error = CKError(NimbusError(failed.cause.code, reason: failed.cause.reason, serverErrorCode: failed.cause.serverErrorCode))
            switch failed.change {
            case .save(let zone): failedSaves.append(.init(zone: CKRecordZone(zoneName: zone.zoneName), error: error))
            case .delete(let zone): failedDeletes[CKRecordZone.ID(zone)] = error
            }
        }
        await ck.emit(.sentDatabaseChanges(.init(savedZones: changes.savedZones.map { CKRecordZone(zoneName: $0.zoneName) },
                                                 failedZoneSaves: failedSaves, deletedZoneIDs: changes.deletedZones.map { CKRecordZone.ID($0) },
                                                 failedZoneDeletes: failedDeletes)))
    }

    /// Record changes sent: `sentRecordZoneChanges`.
    private func reportRecords(_ changes: SentChanges, engine: SyncEngine, to ck: CKSyncEngine) async {
        let conflicts = lock.withLock { shared -> [RecordID: Conflict] in
            defer { shared.conflicts = [:] }
            return shared.conflicts
        }
        let database = try? ck.database.nimbusDatabase()
        var failedSaves: [CKSyncEngine.Event.SentRecordZoneChanges.FailedRecordSave] = []
        for server in changes.replacedByServer {
            let conflict = conflicts[server.id]
            let local = CKRecord(record: conflict?.local ?? server, database: database)
            var info: [String: Any] = [CKRecordChangedErrorServerRecordKey: CKRecord(record: server, database: database),
                                       CKRecordChangedErrorClientRecordKey: local]
            if let base = conflict?.base { info[CKRecordChangedErrorAncestorRecordKey] = CKRecord(record: base, database: database) }
            let error = CKError(NimbusError(.serverRecordChanged, reason: "The record changed on the server: merge into error.serverRecord "
                + "and add the save again.", serverRecord: server), userInfo: info)
            failedSaves.append(.init(record: local, error: error))
        }
        var failedDeletes: [CKRecord.ID: CKError] = [:]
        for failed in changes.failed {
            let error = CKError(NimbusError(failed.cause.code, reason: failed.cause.reason, serverErrorCode: failed.cause.serverErrorCode))
            switch failed.change {
            case .save(let record): failedSaves.append(.init(record: CKRecord(record: record, database: database), error: error))
            case .delete(let id): failedDeletes[CKRecord.ID(id)] = error
            }
        }
        await ck.state.refresh()
        await ck.emit(.sentRecordZoneChanges(.init(savedRecords: changes.saved.map { CKRecord(record: $0, database: database) },
                                                   failedRecordSaves: failedSaves,
                                                   deletedRecordIDs: changes.deleted.map { CKRecord.ID($0) },
                                                   failedRecordDeletes: failedDeletes)))
    }

    /// The pull model: the records of these saves, from the app's `nextRecordZoneChangeBatch`
    /// asked with a scope of exactly these IDs. A save the app does not supply is dropped.
    func syncEngine(_ engine: SyncEngine, recordsToSave ids: [RecordID]) async -> [Record] {
        guard let ck = syncEngine, let delegate = ck.delegate else { return [] }
        let suppressed = ck.state.suppressedIDs
        let wanted = ids.map { CKRecord.ID($0) }.filter { !suppressed.contains($0) }
        guard !wanted.isEmpty else { return [] }
        let reason = lock.withLock { $0.reason }
        let context = CKSyncEngine.SendChangesContext(reason: reason, options: CKSyncEngine.SendChangesOptions(scope: .recordIDs(Set(wanted))))
        guard let batch = await delegate.nextRecordZoneChangeBatch(context, syncEngine: ck) else { return [] }
        let asked = Set(ids)
        return batch.recordsToSave.map(\.record).filter { asked.contains($0.id) }
    }
}
