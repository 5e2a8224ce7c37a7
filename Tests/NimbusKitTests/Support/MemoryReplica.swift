import Foundation
@testable import NimbusKit

/// A test app: an in-memory local store fed by a sync engine. It records what the engine told
/// it (applied batches, conflicts, resets, failures) so tests can check it.
final class MemoryReplica: SyncEngineDelegate, @unchecked Sendable {
    // Safe: every stored property is only touched under `lock`.
    private let lock = NSLock()
    private var records: [RecordID: Record] = [:]
    private var appliedIDs: [RecordID] = []
    private var appliedAt: [RecordID: Date] = [:]
    private var conflictsSeen: [Conflict] = []
    private var resets: [FetchedChanges] = []
    private var failures: [FailedChange] = []
    private var spuriousErrors: [FailedChange] = []
    private var unreadableSeen: [UnreadableRecord] = []
    let resolution: (@Sendable (Conflict) -> ConflictResolution)?

    init(resolution: (@Sendable (Conflict) -> ConflictResolution)? = nil) {
        self.resolution = resolution
    }

    var snapshot: [RecordID: Record] { lock.withLock { records } }
    var conflicts: [Conflict] { lock.withLock { conflictsSeen } }
    var tokenResets: [FetchedChanges] { lock.withLock { resets } }
    var failed: [FailedChange] { lock.withLock { failures } }
    var applied: [RecordID] { lock.withLock { appliedIDs } }
    /// The records the engine said it could not open (`FetchedChanges.unreadable`), in order.
    var unreadable: [UnreadableRecord] { lock.withLock { unreadableSeen } }
    func appliedTime(_ id: RecordID) -> Date? { lock.withLock { appliedAt[id] } }

    /// A local edit: stored here, then handed to the engine.
    func edit(_ record: Record) { lock.withLock { records[record.id] = record } }
    func remove(_ id: RecordID) { lock.withLock { records[id] = nil } }
    func record(_ id: RecordID) -> Record? { lock.withLock { records[id] } }

    func syncEngine(_ engine: SyncEngine, apply changes: FetchedChanges) async throws {
        let now = Date()
        lock.withLock {
            for record in changes.modified {
                records[record.id] = record
                appliedIDs.append(record.id)
                appliedAt[record.id] = appliedAt[record.id] ?? now
            }
            for id in changes.deleted { records[id] = nil }
            unreadableSeen += changes.unreadable
            if changes.reason != .changes { resets.append(changes) }
        }
    }

    func syncEngine(_ engine: SyncEngine, didSend changes: SentChanges) async {
        lock.withLock {
            for record in changes.saved + changes.replacedByServer { records[record.id] = record }
            failures += changes.failed
        }
    }

    /// The pull model: the records as they are here now.
    func syncEngine(_ engine: SyncEngine, recordsToSave ids: [RecordID]) async -> [Record] {
        lock.withLock { ids.compactMap { records[$0] } }
    }

    func syncEngine(_ engine: SyncEngine, localRecordIDsIn zone: ZoneID) async -> Set<RecordID> {
        lock.withLock { Set(records.keys.filter { $0.zoneID == zone }) }
    }

    func syncEngine(_ engine: SyncEngine, resolve conflict: Conflict) async -> ConflictResolution {
        lock.withLock { conflictsSeen.append(conflict) }
        return resolution?(conflict) ?? engine.conflictPolicy.resolve(conflict)
    }
}

/// Everything a zone holds on the server, by record, through `records/changes` from no token.
func serverContents(_ database: Database, zone: ZoneID = .default) async throws -> [RecordID: Record] {
    var token: SyncToken? = nil
    var records: [RecordID: Record] = [:]
    while true {
        let page = try await database.changes(in: zone, since: token, resultsLimit: 400)
        for record in page.modified { records[record.id] = record }
        for deleted in page.deleted { records[deleted.id] = nil }
        token = page.syncToken
        if !page.moreComing { return records }
    }
}

/// Fields only (what the app sees), for comparing replicas with the server.
func fieldsByID(_ records: [RecordID: Record]) -> [RecordID: [String: RecordValue]] {
    records.mapValues(\.fields)
}
