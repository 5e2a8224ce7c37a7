import Foundation

/// Which changes a `sendChanges` or `fetchChanges` covers (CKSyncEngine's scopes).
public enum SyncScope: Sendable, Hashable {
    case all
    /// Only these zones.
    case zones(Set<ZoneID>)
    /// Every zone but these.
    case allExcluding(Set<ZoneID>)
    /// Only these records (and, to send them, the zone changes of their zones).
    case records(Set<RecordID>)

    /// Whether a record change is in the scope.
    public func contains(_ id: RecordID) -> Bool {
        switch self {
        case .all: return true
        case .zones(let zones): return zones.contains(id.zoneID)
        case .allExcluding(let zones): return !zones.contains(id.zoneID)
        case .records(let ids): return ids.contains(id)
        }
    }

    /// Whether a zone (its zone changes, its fetch) is in the scope: for `records`, a zone
    /// holding one of them.
    public func contains(zone: ZoneID) -> Bool {
        switch self {
        case .all: return true
        case .zones(let zones): return zones.contains(zone)
        case .allExcluding(let zones): return !zones.contains(zone)
        case .records(let ids): return ids.contains { $0.zoneID == zone }
        }
    }
}
