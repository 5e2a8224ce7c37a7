import Foundation

/// Keeps a local store in sync with a Nimbus database, as CKSyncEngine does:
/// - `enqueue` writes changes to a durable outbox (an append-only journal, one fsync per call)
///   before it returns; `sendChanges` delivers them with retries that cannot duplicate. Changes
///   are whole records (`.save(record)`) or, in the pull model, record IDs whose records the
///   delegate supplies at send time (`enqueueSaves`);
/// - `fetchChanges` brings the server's changes zone by zone (assets downloaded), saving each
///   zone's token only after the delegate applied the batch;
/// - `startLive` holds one long-poll for the device and fetches as soon as anything changes.
///
/// The engine does not retain its delegate (as CKSyncEngine): the app keeps it alive. A fetch
/// without a delegate throws and moves no token.
public actor SyncEngine {
    public let database: Database
    public nonisolated let conflictPolicy: ConflictPolicy
    weak var delegate: (any SyncEngineDelegate)?
    let journal: SyncJournal
    var state: SyncState
    /// Asset files of pending changes, kept until sent.
    var assetPins: AssetPins
    /// Outbox entries of a request in flight (by record), so that concurrent rounds never send one twice.
    var inFlight: Set<RecordID> = []
    /// Zone changes (by sequence) of a request in flight.
    var zonesInFlight: Set<Int64> = []
    var sendBackoff = Backoff()
    var retryAt: Date?
    var retryTask: Task<Void, Never>?
    var isOffline = false
    var lastError: NimbusError?
    var liveTask: Task<Void, Never>?
    var fetchInProgress: Task<Void, any Error>?
    var automaticSending = false
    var statusContinuations: [UUID: AsyncStream<SyncStatus>.Continuation] = [:]
    /// Positions of outbox entries by record (rebuilt when stale; see `outboxIndex`).
    var outboxPositions: [RecordID: Int]?
    /// Entries answered in the batch being applied, removed together at its end.
    var answered: Set<RecordID> = []
    /// Keeps the IDs of the records the server has (fetched or sent), so that a token reset names
    /// the gone ones without the delegate's `localRecordIDsIn` (SyncEngine+Known).
    public nonisolated let tracksRecordIDs: Bool
    /// Records per request the engine sends (the server's limit caps it further).
    public var batchSize = 400

    /// Opens (or creates) the engine's state file. Changes left in it by an earlier run, even one
    /// that was killed, are sent again; nothing accepted is lost and nothing is sent twice. A
    /// state file of an earlier NimbusKit (one JSON document) is migrated to the journal.
    /// `retryBackoff` spaces retries after request-level failures (jittered, at least the
    /// server's `retryAfter`). `tracksRecordIDs`: see the property.
    public init(database: Database, stateURL: URL, delegate: any SyncEngineDelegate,
                conflictPolicy: ConflictPolicy = .defaultPolicy, retryBackoff: Backoff = Backoff(), tracksRecordIDs: Bool = false) throws {
        self.database = database
        self.tracksRecordIDs = tracksRecordIDs
        sendBackoff = retryBackoff
        self.conflictPolicy = conflictPolicy
        self.delegate = delegate
        (journal, state) = try SyncJournal.open(stateURL)
        assetPins = AssetPins(stateURL: stateURL)
        assetPins.release(keeping: state)
    }

    // MARK: - Outbox

    /// Accepts local changes. When this returns they are on disk: a crash now loses none of
    /// them. A later change of a record replaces its pending one. With automatic sending
    /// (`startLive`), sending starts at once. Costs one journal append and one fsync, however
    /// many changes are pending.
    public func enqueue(_ changes: [PendingChange]) throws {
        guard !changes.isEmpty else { return }
        // What to restore if the journal refuses the change (copying the state would copy the outbox).
        var previous: [RecordID: OutboxEntry?] = [:]
        let (failed, zones, sequence, answeredBefore) = (state.failed, state.zones, state.nextSequence, answered)
        var pinned = false
        let changes = changes.map { change -> PendingChange in
            let (kept, linked) = assetPins.pin(change)
            pinned = pinned || linked
            return database.container.sealedForOutbox(kept)  // a resend carries the same ciphertext
        }
        if pinned { assetPins.sync() }
        for change in changes {
            if previous.index(forKey: change.recordID) == nil {
                previous[change.recordID] = .some(state.outbox.entry(for: change.recordID))
            }
            merge(change)
        }
        do {
            try persist()
        } catch {
            for (id, entry) in previous {
                if let entry { state.outbox.restore(entry) } else { state.outbox.remove(id) }
            }
            (state.failed, state.zones, state.nextSequence, answered) = (failed, zones, sequence, answeredBefore)
            throw error
        }
        publishStatus()
        if automaticSending { scheduleSend(after: 0) }
    }

    /// Accepts one local change (see `enqueue(_:)`).
    public func enqueue(_ change: PendingChange) throws { try enqueue([change]) }

    private func merge(_ change: PendingChange) {
        if !state.failed.isEmpty && state.failed.contains(where: { $0.recordID == change.recordID }) {
            state.failed.removeAll { $0.recordID == change.recordID }
        }
        let zone = change.recordID.zoneID
        if let index = state.outbox.index(of: change.recordID), let delete = state.zoneChanges.pendingDelete(of: zone),
           state.outbox[index].sequence < delete {
            // The pending change predates a pending delete of its zone, which will drop it: this
            // change is a new one, sent after the delete.
            state.outbox.remove(change.recordID)
            answered.remove(change.recordID)
        }
        if let index = state.outbox.index(of: change.recordID) {
            var entry = state.outbox[index]
            // An entry answered in a batch still being applied is done: the change starts anew.
            entry.change = answered.remove(change.recordID) != nil ? change : Self.combine(entry.change, with: change)
            entry.revision += 1
            entry.attempts = 0
            state.outbox[index] = entry
        } else {
            state.outbox.append(OutboxEntry(change: change, sequence: state.nextSequence, revision: 1, enqueuedAt: Date(),
                                            attempts: 0, lastError: nil))
            state.nextSequence += 1
        }
        if !state.zones.contains(zone.zoneName) { state.zones.append(zone.zoneName) }
    }

    /// A later change of a record over a pending one: the newest fields win, the oldest base stays
    /// (the server has not seen the pending change, so its base is still the server's copy).
    static func combine(_ pending: PendingChange, with later: PendingChange) -> PendingChange {
        guard case .save(let old) = pending, case .save(var new) = later else { return later }
        if new.changeTag == nil || new.changeTag == old.changeTag {
            new.changeTag = old.changeTag
            new.serverFields = old.serverFields
            new.created = old.created
            new.modified = old.modified
        }
        return .save(new)
    }

    /// Puts parked changes (record and zone changes) back into the outbox (after the app fixed what their error named).
    public func retryFailed() throws {
        let failed = state.failed
        state.failed = []
        let failedZones = state.zoneChanges.failed
        var next = state.nextSequence
        for change in failedZones { state.zoneChanges.add(change.change, sequence: &next) }
        state.nextSequence = next
        for change in failed { merge(change.change) }
        try persist()
        publishStatus()
    }

    /// Forgets parked changes (record and zone changes).
    public func discardFailed() throws {
        state.failed = []
        state.zoneChanges.failed = []
        try persist()
        publishStatus()
    }

    /// The record changes not yet acknowledged by the server, oldest first (zone changes:
    /// `pendingZoneChanges`).
    public var pendingChanges: [PendingChange] { state.outbox.sorted { $0.sequence < $1.sequence }.map(\.change) }

    // MARK: - Status

    public var status: SyncStatus {
        SyncStatus(pendingCount: state.outbox.count + state.zoneChanges.pending.count, failed: state.failed,
                   failedZoneChanges: state.zoneChanges.failed, lastSync: state.lastSync, isOffline: isOffline,
                   lastError: lastError, isLive: liveTask != nil)
    }

    /// The status now and after every change of it.
    public func statusUpdates() -> AsyncStream<SyncStatus> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<SyncStatus>.makeStream(bufferingPolicy: .bufferingNewest(1))
        continuation.yield(status)
        statusContinuations[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeStatusContinuation(id) }
        }
        return stream
    }

    private func removeStatusContinuation(_ id: UUID) { statusContinuations[id] = nil }

    func publishStatus() {
        guard !statusContinuations.isEmpty else { return }
        let current = status
        for continuation in statusContinuations.values { continuation.yield(current) }
    }

    /// Bytes the engine wrote to its state file since it opened it (tests, bench/client.sh).
    var stateBytesWritten: Int64 { journal.bytesWritten }

    /// Whether the journal holds entries written but not yet synced to the disk (tests).
    var stateUnsynced: Bool { journal.unsynced }

    /// Appends what changed to the journal; `durable` (enqueues, tokens) waits for the disk.
    func persist(durable: Bool = true) throws {
        try journal.commit(&state, durable: durable)
        if journal.lastCommitDroppedChanges && assetPins.count > 0 { assetPins.release(keeping: state) }
    }

    /// Carries on with a new device token (after a revoke and a new pairing): the container's
    /// requests use it from now on, a send waiting on a backoff goes now.
    public func replaceCredential(_ token: String) {
        database.container.replaceCredential(token)
        sendBackoff.reset()
        retryAt = nil
        lastError = nil
        publishStatus()
        if automaticSending && hasPendingChanges { scheduleSend(after: 0) }
    }

    /// Records a request's outcome for the status.
    func noteRequest(_ error: NimbusError?) {
        lastError = error
        isOffline = error?.code == .networkFailure
        publishStatus()
    }
}
