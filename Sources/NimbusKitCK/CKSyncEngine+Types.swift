import Foundation

/// The value types of `CKSyncEngine`, with the names and shapes of Apple's (iOS 17).
extension CKSyncEngine {
    /// A record change the app wants sent.
    public enum PendingRecordZoneChange: Hashable, Sendable {
        case saveRecord(CKRecord.ID)
        case deleteRecord(CKRecord.ID)

        var recordID: CKRecord.ID {
            switch self {
            case .saveRecord(let id), .deleteRecord(let id): return id
            }
        }
    }

    /// A zone change the app wants sent.
    public enum PendingDatabaseChange: Hashable, Sendable {
        case saveZone(CKRecordZone)
        case deleteZone(CKRecordZone.ID)

        var zoneID: CKRecordZone.ID {
            switch self {
            case .saveZone(let zone): return zone.zoneID
            case .deleteZone(let id): return id
            }
        }

        public static func == (a: Self, b: Self) -> Bool {
            switch (a, b) {
            case (.saveZone(let x), .saveZone(let y)): return x.zoneID == y.zoneID
            case (.deleteZone(let x), .deleteZone(let y)): return x == y
            default: return false
            }
        }

        public func hash(into hasher: inout Hasher) {
            switch self {
            case .saveZone(let zone): hasher.combine(0); hasher.combine(zone.zoneID)
            case .deleteZone(let id): hasher.combine(1); hasher.combine(id)
            }
        }
    }

    /// Why the engine syncs.
    public enum SyncReason: Sendable { case scheduled, manual }

    /// What `sendChanges` covers.
    public struct SendChangesOptions: Sendable {
        public enum Scope: Sendable {
            case all
            case zoneIDs(Set<CKRecordZone.ID>)
            case allExcluding(Set<CKRecordZone.ID>)
            case recordIDs(Set<CKRecord.ID>)

            public func contains(_ recordID: CKRecord.ID) -> Bool {
                switch self {
                case .all: return true
                case .zoneIDs(let zones): return zones.contains(recordID.zoneID)
                case .allExcluding(let zones): return !zones.contains(recordID.zoneID)
                case .recordIDs(let ids): return ids.contains(recordID)
                }
            }

            public func contains(_ zoneID: CKRecordZone.ID) -> Bool {
                switch self {
                case .all: return true
                case .zoneIDs(let zones): return zones.contains(zoneID)
                case .allExcluding(let zones): return !zones.contains(zoneID)
                case .recordIDs(let ids): return ids.contains { $0.zoneID == zoneID }
                }
            }

            public func contains(_ pendingChange: PendingRecordZoneChange) -> Bool { contains(pendingChange.recordID) }
            public func contains(_ pendingChange: PendingDatabaseChange) -> Bool { contains(pendingChange.zoneID) }
        }

        public var scope: Scope
        public init(scope: Scope = .all) { self.scope = scope }
    }

    /// What `fetchChanges` covers (`zoneIDs`, or every changed zone but `allExcluding`).
    public struct FetchChangesOptions: Sendable {
        public enum Scope: Sendable { case all, zoneIDs([CKRecordZone.ID]), allExcluding([CKRecordZone.ID]) }
        public var scope: Scope
        public var prioritizedZoneIDs: [CKRecordZone.ID] = []
        public init(scope: Scope = .all) { self.scope = scope }
    }

    /// Handed to `nextRecordZoneChangeBatch`.
    public struct SendChangesContext: Sendable {
        public let reason: SyncReason
        public let options: SendChangesOptions
    }

    /// Handed to `nextFetchChangesOptions`.
    public struct FetchChangesContext: Sendable {
        public let reason: SyncReason
        public let options: FetchChangesOptions
    }

    /// The records to save and delete in one request, from the app's local store.
    public struct RecordZoneChangeBatch: Sendable {
        public var recordsToSave: [CKRecord]
        public var recordIDsToDelete: [CKRecord.ID]
        public var atomicByZone = false

        public init(recordsToSave: [CKRecord] = [], recordIDsToDelete: [CKRecord.ID] = [], atomicByZone: Bool = false) {
            self.recordsToSave = recordsToSave
            self.recordIDsToDelete = recordIDsToDelete
            self.atomicByZone = atomicByZone
        }

        /// The batch of these pending changes: each save's record from `recordProvider` (a nil
        /// record drops the save: the app no longer has it). Nil when there is nothing to send.
        public init?(pendingChanges: [PendingRecordZoneChange], recordProvider: (CKRecord.ID) -> CKRecord?) async {
            var saves: [CKRecord] = []
            var deletes: [CKRecord.ID] = []
            for change in pendingChanges {
                switch change {
                case .saveRecord(let id): if let record = recordProvider(id) { saves.append(record) }
                case .deleteRecord(let id): deletes.append(id)
                }
            }
            guard !saves.isEmpty || !deletes.isEmpty else { return nil }
            self.init(recordsToSave: saves, recordIDsToDelete: deletes)
        }
    }
}

extension CKSyncEngine.SendChangesOptions.Scope {
    /// NimbusKit's scope of the same changes.
    var nimbus: SyncScope {
        switch self {
        case .all: return .all
        case .zoneIDs(let zones): return .zones(Set(zones.map(\.nimbus)))
        case .allExcluding(let zones): return .allExcluding(Set(zones.map(\.nimbus)))
        case .recordIDs(let ids): return .records(Set(ids.map(\.nimbus)))
        }
    }
}

extension CKSyncEngine.FetchChangesOptions.Scope {
    /// NimbusKit's scope of the same zones.
    var nimbus: SyncScope {
        switch self {
        case .all: return .all
        case .zoneIDs(let zones): return .zones(Set(zones.map(\.nimbus)))
        case .allExcluding(let zones): return .allExcluding(Set(zones.map(\.nimbus)))
        }
    }
}

extension CKSyncEngine.PendingDatabaseChange {
    /// NimbusKit's zone change.
    var nimbus: PendingZoneChange {
        switch self {
        case .saveZone(let zone): return .save(zone.zoneID.nimbus)
        case .deleteZone(let id): return .delete(id.nimbus)
        }
    }

    init(_ change: PendingZoneChange) {
        switch change {
        case .save(let zone): self = .saveZone(CKRecordZone(zoneName: zone.zoneName))
        case .delete(let zone): self = .deleteZone(CKRecordZone.ID(zone))
        }
    }
}
