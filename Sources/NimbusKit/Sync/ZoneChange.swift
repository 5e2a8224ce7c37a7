import Foundation

/// A zone change the app hands to the engine (CKSyncEngine's `PendingDatabaseChange`): creating
/// a zone, or deleting one with its records. Sent before record changes (`zones/modify`).
public enum PendingZoneChange: Sendable, Hashable, Codable {
    case save(ZoneID)
    case delete(ZoneID)

    public var zoneID: ZoneID {
        switch self {
        case .save(let zone), .delete(let zone): return zone
        }
    }

    var isDelete: Bool {
        if case .delete = self { return true }
        return false
    }
}

/// A zone change the server refused for good (its code says why), kept in the status until the
/// app retries or discards it.
public struct FailedZoneChange: Sendable, Hashable, Codable {
    public var change: PendingZoneChange
    public var cause: FailedChange.Cause
    public var failedAt: Date

    public var zoneID: ZoneID { change.zoneID }
}

/// A pending zone change; `sequence` comes from the outbox's counter, so it orders zone changes
/// against record changes (a zone delete drops the record changes enqueued before it) and
/// identifies the entry (an answer to a replaced entry changes nothing).
struct ZoneChangeEntry: Sendable, Hashable, Codable {
    var change: PendingZoneChange
    var sequence: Int64
    var attempts = 0
}

extension SyncState {
    /// The zone changes part: pending ones in enqueue order and parked ones (journal item `zones`,
    /// written whole when it changed; a few entries at most in practice).
    struct ZoneChanges: Sendable, Codable, Equatable {
        var pending: [ZoneChangeEntry] = []
        var failed: [FailedZoneChange] = []

        var isEmpty: Bool { pending.isEmpty && failed.isEmpty }

        /// Adds a change: a save after a pending save of the zone is nothing new; a delete
        /// replaces the zone's pending changes (a save after a delete stays after it, so the
        /// zone is emptied and made again). A parked change of the zone is forgotten.
        mutating func add(_ change: PendingZoneChange, sequence: inout Int64) {
            failed.removeAll { $0.zoneID == change.zoneID }
            switch change {
            case .save(let zone):
                if let last = pending.last(where: { $0.change.zoneID == zone }), !last.change.isDelete { return }
            case .delete(let zone):
                pending.removeAll { $0.change.zoneID == zone }
            }
            pending.append(ZoneChangeEntry(change: change, sequence: sequence))
            sequence += 1
        }

        /// Zones whose record changes wait for a zone change (not parked ones).
        var blockedZones: Set<ZoneID> { Set(pending.map(\.change.zoneID)) }

        /// The sequence of the newest pending delete of `zone`.
        func pendingDelete(of zone: ZoneID) -> Int64? {
            pending.last { $0.change == .delete(zone) }?.sequence
        }
    }
}
