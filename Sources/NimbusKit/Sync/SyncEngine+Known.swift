import Foundation

/// The records the server has as far as the engine knows (fetched, or sent and acknowledged),
/// by zone, kept when `tracksRecordIDs` is on. After CHANGE_TOKEN_EXPIRED the engine names the
/// records the server no longer has from the delegate's local IDs and these: an app that cannot
/// list its local records (CKSyncEngine's delegate has no such call) still converges. Kept in the
/// journal as deltas (item `known`), written with the commit that follows them.
extension SyncEngine {
    func noteKnown(in zone: ZoneID, added: [RecordID], removed: [RecordID]) {
        guard tracksRecordIDs, !(added.isEmpty && removed.isEmpty) else { return }
        let (add, remove) = (added.map(\.recordName), removed.map(\.recordName))
        var names = state.knownRecords[zone.zoneName] ?? []
        names.formUnion(add)
        names.subtract(remove)
        state.knownRecords[zone.zoneName] = names.isEmpty ? nil : names
        state.knownDeltas.append(KnownDelta(zone: zone.zoneName, added: add, removed: remove, whole: nil))
    }

    /// The server's answers of a round.
    func noteKnown(_ sent: SentChanges) {
        guard tracksRecordIDs else { return }
        let added = Dictionary(grouping: (sent.saved + sent.replacedByServer).map(\.id), by: \.zoneID)
        let removed = Dictionary(grouping: sent.deleted, by: \.zoneID)
        for zone in Set(added.keys).union(removed.keys) { noteKnown(in: zone, added: added[zone] ?? [], removed: removed[zone] ?? []) }
        for zone in sent.deletedZones { forgetKnown(zone) }
    }

    /// The zone is gone with its records.
    func forgetKnown(_ zone: ZoneID) {
        guard tracksRecordIDs, state.knownRecords.removeValue(forKey: zone.zoneName) != nil else { return }
        state.knownDeltas.append(KnownDelta(zone: zone.zoneName, added: [], removed: [], whole: true))
    }

    func knownRecordIDs(in zone: ZoneID) -> Set<RecordID> {
        Set((state.knownRecords[zone.zoneName] ?? []).map { RecordID(recordName: $0, zoneID: zone) })
    }
}

/// A change of the known records of one zone (journal item `known`); `whole` replaces the set.
struct KnownDelta: Sendable, Codable, Equatable {
    var zone: String
    var added: [String]
    var removed: [String]
    var whole: Bool?

    func apply(to known: inout [String: Set<String>]) {
        var names = whole == true ? [] : known[zone] ?? []
        names.formUnion(added)
        names.subtract(removed)
        known[zone] = names.isEmpty ? nil : names
    }

    /// Roughly what the delta adds to the live state's bytes (for the compaction threshold).
    var liveBytes: Int { added.reduce(0) { $0 + $1.utf8.count + 3 } - removed.reduce(0) { $0 + $1.utf8.count + 3 } }
}
