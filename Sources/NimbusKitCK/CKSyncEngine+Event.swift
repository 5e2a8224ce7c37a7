import Foundation

/// What `CKSyncEngine` tells its delegate in `handleEvent(_:syncEngine:)` (Apple's cases).
extension CKSyncEngine {
    public enum Event: Sendable, CustomStringConvertible {
        case stateUpdate(StateUpdate)
        case accountChange(AccountChange)
        case fetchedDatabaseChanges(FetchedDatabaseChanges)
        case fetchedRecordZoneChanges(FetchedRecordZoneChanges)
        case sentDatabaseChanges(SentDatabaseChanges)
        case sentRecordZoneChanges(SentRecordZoneChanges)
        case willFetchChanges(WillFetchChanges)
        case willFetchRecordZoneChanges(WillFetchRecordZoneChanges)
        case didFetchRecordZoneChanges(DidFetchRecordZoneChanges)
        case didFetchChanges(DidFetchChanges)
        case willSendChanges(WillSendChanges)
        case didSendChanges(DidSendChanges)

        public var description: String {
            switch self {
            case .stateUpdate: return "stateUpdate"
            case .accountChange(let change): return "accountChange(\(change.changeType))"
            case .fetchedDatabaseChanges(let changes):
                return "fetchedDatabaseChanges(\(changes.modifications.count) changed, \(changes.deletions.count) deleted)"
            case .fetchedRecordZoneChanges(let changes):
                return "fetchedRecordZoneChanges(\(changes.modifications.count) changed, \(changes.deletions.count) deleted)"
            case .sentDatabaseChanges(let sent): return "sentDatabaseChanges(\(sent.savedZones.count) saved, \(sent.deletedZoneIDs.count) deleted)"
            case .sentRecordZoneChanges(let sent):
                return "sentRecordZoneChanges(\(sent.savedRecords.count) saved, \(sent.failedRecordSaves.count) failed, "
                    + "\(sent.deletedRecordIDs.count) deleted)"
            case .willFetchChanges: return "willFetchChanges"
            case .willFetchRecordZoneChanges(let event): return "willFetchRecordZoneChanges(\(event.zoneID.zoneName))"
            case .didFetchRecordZoneChanges(let event): return "didFetchRecordZoneChanges(\(event.zoneID.zoneName))"
            case .didFetchChanges: return "didFetchChanges"
            case .willSendChanges: return "willSendChanges"
            case .didSendChanges: return "didSendChanges"
            }
        }

        /// The state to persist: hand it back in `Configuration(stateSerialization:)` next launch.
        public struct StateUpdate: Sendable { public let stateSerialization: State.Serialization }

        public struct AccountChange: Sendable {
            public enum ChangeType: Sendable {
                case signIn(currentUser: CKRecord.ID)
                case signOut(previousUser: CKRecord.ID)
                case switchAccounts(previousUser: CKRecord.ID, currentUser: CKRecord.ID)
            }
            public let changeType: ChangeType
        }

        public struct FetchedDatabaseChanges: Sendable {
            public struct Modification: Sendable { public let zoneID: CKRecordZone.ID }
            public struct Deletion: Sendable {
                public enum Reason: Sendable { case deleted, purged, encryptedDataReset }
                public let zoneID: CKRecordZone.ID
                public let reason: Reason
            }
            public let modifications: [Modification]
            public let deletions: [Deletion]
        }

        public struct FetchedRecordZoneChanges: Sendable {
            public let modifications: [CKDatabase.RecordZoneChange.Modification]
            public let deletions: [CKDatabase.RecordZoneChange.Deletion]
        }

        public struct SentDatabaseChanges: Sendable {
            public struct FailedZoneSave: Sendable {
                public let zone: CKRecordZone
                public let error: CKError
            }
            public let savedZones: [CKRecordZone]
            public let failedZoneSaves: [FailedZoneSave]
            public let deletedZoneIDs: [CKRecordZone.ID]
            public let failedZoneDeletes: [CKRecordZone.ID: CKError]
        }

        public struct SentRecordZoneChanges: Sendable {
            public struct FailedRecordSave: Sendable {
                public let record: CKRecord
                public let error: CKError
            }
            public let savedRecords: [CKRecord]
            public let failedRecordSaves: [FailedRecordSave]
            public let deletedRecordIDs: [CKRecord.ID]
            public let failedRecordDeletes: [CKRecord.ID: CKError]
        }

        public struct WillFetchChanges: Sendable {}
        public struct WillFetchRecordZoneChanges: Sendable { public let zoneID: CKRecordZone.ID }
        public struct DidFetchRecordZoneChanges: Sendable {
            public let zoneID: CKRecordZone.ID
            public let error: CKError?
        }
        public struct DidFetchChanges: Sendable {}
        public struct WillSendChanges: Sendable { public let context: SendChangesContext }
        public struct DidSendChanges: Sendable { public let context: SendChangesContext }
    }
}

/// The app's side of a `CKSyncEngine` (Apple's protocol).
public protocol CKSyncEngineDelegate: AnyObject, Sendable {
    func handleEvent(_ event: CKSyncEngine.Event, syncEngine: CKSyncEngine) async
    func nextRecordZoneChangeBatch(_ context: CKSyncEngine.SendChangesContext, syncEngine: CKSyncEngine) async
        -> CKSyncEngine.RecordZoneChangeBatch?
    func nextFetchChangesOptions(_ context: CKSyncEngine.FetchChangesContext, syncEngine: CKSyncEngine) async
        -> CKSyncEngine.FetchChangesOptions
}

extension CKSyncEngineDelegate {
    public func nextFetchChangesOptions(_ context: CKSyncEngine.FetchChangesContext, syncEngine: CKSyncEngine) async
        -> CKSyncEngine.FetchChangesOptions { context.options }
}
