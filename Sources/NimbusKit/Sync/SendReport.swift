import Foundation

/// What one `sendChanges()` round did: how many changes the server acknowledged, which it
/// refused for good (parked, with their codes), how many are still pending, and the failure
/// that stopped the round early, if one did.
public struct SendReport: Sendable, Hashable {
    /// Saves and deletes the server acknowledged (merged conflicts and our own lost answers included).
    public var sent = 0
    /// Changes parked in this round (`status.failed` keeps them until `retryFailed` or `discardFailed`).
    public var parked: [FailedChange] = []
    /// Zones the server created or deleted in this round (a delete of a zone already gone counts).
    public var savedZones: [ZoneID] = []
    public var deletedZones: [ZoneID] = []
    /// Zone changes parked in this round (`status.failedZoneChanges`).
    public var parkedZoneChanges: [FailedZoneChange] = []
    /// Changes still pending in the round's scope after it (record and zone changes): waiting for
    /// a retry, or beyond `maxRequests`.
    public var left = 0
    /// The request-level failure that ended the round (no answer, 5xx, 408, 429, authentication).
    public var stoppedBy: NimbusError?

    public init() {}

    mutating func add(_ changes: SentChanges) {
        sent += changes.saved.count + changes.deleted.count + changes.replacedByServer.count
        parked += changes.failed
        savedZones += changes.savedZones
        deletedZones += changes.deletedZones
        parkedZoneChanges += changes.failedZones
    }
}

extension SentChanges {
    mutating func add(_ other: SentChanges) {
        saved += other.saved
        deleted += other.deleted
        replacedByServer += other.replacedByServer
        failed += other.failed
        savedZones += other.savedZones
        deletedZones += other.deletedZones
        failedZones += other.failedZones
    }
}
