import Foundation

/// Creates and deletes zones.
public final class CKModifyRecordZonesOperation: CKDatabaseOperation, @unchecked Sendable {
    public var recordZonesToSave: [CKRecordZone]?
    public var recordZoneIDsToDelete: [CKRecordZone.ID]?
    public var perRecordZoneSaveBlock: ((CKRecordZone.ID, Result<CKRecordZone, any Error>) -> Void)?
    public var perRecordZoneDeleteBlock: ((CKRecordZone.ID, Result<Void, any Error>) -> Void)?
    public var modifyRecordZonesResultBlock: ((Result<Void, any Error>) -> Void)?
    /// The pre-iOS 15 block.
    public var modifyRecordZonesCompletionBlock: (([CKRecordZone]?, [CKRecordZone.ID]?, (any Error)?) -> Void)?

    public override init() { super.init() }

    public convenience init(recordZonesToSave: [CKRecordZone]? = nil, recordZoneIDsToDelete: [CKRecordZone.ID]? = nil) {
        self.init()
        self.recordZonesToSave = recordZonesToSave
        self.recordZoneIDsToDelete = recordZoneIDsToDelete
    }

    override func execute() async {
        let saving = recordZonesToSave ?? []
        let deleting = recordZoneIDsToDelete ?? []
        do {
            let results = try await targetDatabase().modifyRecordZones(saving: saving, deleting: deleting)
            var errors: [AnyHashable: any Error] = [:]
            var saved: [CKRecordZone] = []
            var deleted: [CKRecordZone.ID] = []
            for zone in saving {
                let result = results.saveResults[zone.zoneID] ?? .failure(CKError(.internalError))
                perRecordZoneSaveBlock?(zone.zoneID, result)
                switch result {
                case .success(let zone): saved.append(zone)
                case .failure(let error): errors[zone.zoneID] = error
                }
            }
            for id in deleting {
                let result = results.deleteResults[id] ?? .failure(CKError(.internalError))
                perRecordZoneDeleteBlock?(id, result)
                switch result {
                case .success: deleted.append(id)
                case .failure(let error): errors[id] = error
                }
            }
            let partial = CKError.partial(errors)
            modifyRecordZonesResultBlock?(partial.map { .failure($0) } ?? .success(()))
            modifyRecordZonesCompletionBlock?(saved, deleted, partial)
        } catch {
            let error = CKError(error)
            modifyRecordZonesResultBlock?(.failure(error))
            modifyRecordZonesCompletionBlock?(nil, nil, error)
        }
    }
}

/// Saves and deletes subscriptions.
public final class CKModifySubscriptionsOperation: CKDatabaseOperation, @unchecked Sendable {
    public var subscriptionsToSave: [CKSubscription]?
    public var subscriptionIDsToDelete: [CKSubscription.ID]?
    public var perSubscriptionSaveBlock: ((CKSubscription.ID, Result<CKSubscription, any Error>) -> Void)?
    public var perSubscriptionDeleteBlock: ((CKSubscription.ID, Result<Void, any Error>) -> Void)?
    public var modifySubscriptionsResultBlock: ((Result<Void, any Error>) -> Void)?
    /// The pre-iOS 15 block.
    public var modifySubscriptionsCompletionBlock: (([CKSubscription]?, [CKSubscription.ID]?, (any Error)?) -> Void)?

    public override init() { super.init() }

    public convenience init(subscriptionsToSave: [CKSubscription]? = nil, subscriptionIDsToDelete: [CKSubscription.ID]? = nil) {
        self.init()
        self.subscriptionsToSave = subscriptionsToSave
        self.subscriptionIDsToDelete = subscriptionIDsToDelete
    }

    override func execute() async {
        let saving = subscriptionsToSave ?? []
        let deleting = subscriptionIDsToDelete ?? []
        do {
            let results = try await targetDatabase().modifySubscriptions(saving: saving, deleting: deleting)
            var errors: [AnyHashable: any Error] = [:]
            var saved: [CKSubscription] = []
            var deleted: [CKSubscription.ID] = []
            for subscription in saving {
                let result = results.saveResults[subscription.subscriptionID] ?? .failure(CKError(.internalError))
                perSubscriptionSaveBlock?(subscription.subscriptionID, result)
                switch result {
                case .success(let subscription): saved.append(subscription)
                case .failure(let error): errors[subscription.subscriptionID] = error
                }
            }
            for id in deleting {
                let result = results.deleteResults[id] ?? .failure(CKError(.internalError))
                perSubscriptionDeleteBlock?(id, result)
                switch result {
                case .success: deleted.append(id)
                case .failure(let error): errors[id] = error
                }
            }
            let partial = CKError.partial(errors)
            modifySubscriptionsResultBlock?(partial.map { .failure($0) } ?? .success(()))
            modifySubscriptionsCompletionBlock?(saved, deleted, partial)
        } catch {
            let error = CKError(error)
            modifySubscriptionsResultBlock?(.failure(error))
            modifySubscriptionsCompletionBlock?(nil, nil, error)
        }
    }
}
