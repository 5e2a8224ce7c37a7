import Foundation

/// Changes fetched from the server for one zone, to apply to local storage.
public struct FetchedChanges: Sendable {
    public enum Reason: Sendable, Hashable {
        /// Ordinary changes since the zone's token.
        case changes
        /// The token had expired (`CHANGE_TOKEN_EXPIRED`): the zone was fetched again from the
        /// start, and `deleted` lists the local records the server no longer has.
        case tokenReset
        /// The zone was deleted on the server: drop its local records.
        case zoneDeleted
    }

    public var zoneID: ZoneID
    public var modified: [Record]
    public var deleted: [RecordID]
    public var reason: Reason
    /// Changed records this device could not open (no key, or a ciphertext that does not open):
    /// the app shows them as such; they come again after a new key and a token reset.
    public var unreadable: [UnreadableRecord] = []
}

/// The outcome of a round of sending.
public struct SentChanges: Sendable {
    /// The server's copies of saved records (new change tags), including saves whose answer was
    /// lost and recognised as ours, and merged conflicts.
    public var saved: [Record] = []
    public var deleted: [RecordID] = []
    /// Local changes dropped in favour of the server's copy (conflict resolved `useServer`):
    /// apply these copies.
    public var replacedByServer: [Record] = []
    /// Changes parked as failed in this round.
    public var failed: [FailedChange] = []
    /// Zones created, deleted and refused (parked) in this round (`enqueue(zoneChanges:)`).
    public var savedZones: [ZoneID] = []
    public var deletedZones: [ZoneID] = []
    public var failedZones: [FailedZoneChange] = []

    /// The round answered record changes.
    public var hasRecordChanges: Bool { !(saved.isEmpty && deleted.isEmpty && replacedByServer.isEmpty && failed.isEmpty) }
    /// The round answered zone changes.
    public var hasZoneChanges: Bool { !(savedZones.isEmpty && deletedZones.isEmpty && failedZones.isEmpty) }
    var isEmpty: Bool { !hasRecordChanges && !hasZoneChanges }
}

/// What the app provides to the engine. Only `apply` is required.
public protocol SyncEngineDelegate: AnyObject, Sendable {
    /// Applies fetched changes to local storage. The zone's token is saved only after this
    /// returns; if it throws, the same changes are fetched again next time.
    func syncEngine(_ engine: SyncEngine, apply changes: FetchedChanges) async throws
    /// Sent changes were saved, deleted, replaced by the server's copy or parked as failed.
    func syncEngine(_ engine: SyncEngine, didSend changes: SentChanges) async
    /// The ids of the records the app holds in a zone (asked after `CHANGE_TOKEN_EXPIRED`, to
    /// tell which the server no longer has).
    func syncEngine(_ engine: SyncEngine, localRecordIDsIn zone: ZoneID) async -> Set<RecordID>
    /// Resolves a conflict; the default applies the engine's `conflictPolicy`.
    func syncEngine(_ engine: SyncEngine, resolve conflict: Conflict) async -> ConflictResolution
    /// The pull model: the records to send for saves enqueued by ID (`enqueueSaves`), read from
    /// local storage now. An ID left out is a record the app no longer has: its save is dropped.
    func syncEngine(_ engine: SyncEngine, recordsToSave ids: [RecordID]) async -> [Record]
}

extension SyncEngineDelegate {
    public func syncEngine(_ engine: SyncEngine, didSend changes: SentChanges) async {}
    public func syncEngine(_ engine: SyncEngine, localRecordIDsIn zone: ZoneID) async -> Set<RecordID> { [] }
    public func syncEngine(_ engine: SyncEngine, resolve conflict: Conflict) async -> ConflictResolution {
        engine.conflictPolicy.resolve(conflict)
    }
    public func syncEngine(_ engine: SyncEngine, recordsToSave ids: [RecordID]) async -> [Record] { [] }
}

/// What the app's UI needs to say honestly whether sync works.
public struct SyncStatus: Sendable, Hashable {
    /// Changes accepted by `enqueue` (record and zone changes) and not yet acknowledged by the server.
    public var pendingCount: Int
    /// Changes the server refused for good, with their codes.
    public var failed: [FailedChange]
    /// Zone changes the server refused for good, with their codes.
    public var failedZoneChanges: [FailedZoneChange] = []
    /// When a fetch last completed.
    public var lastSync: Date?
    /// The last request could not reach the server.
    public var isOffline: Bool
    /// The last error of a request (nil after a success).
    public var lastError: NimbusError?
    /// Live mode is running.
    public var isLive: Bool
}
