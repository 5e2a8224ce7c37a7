import Foundation

extension CKSubscription {
    public typealias ID = String
}

extension CKQuerySubscription {
    /// A query subscription with a generated ID.
    public convenience init(recordType: CKRecord.RecordType, predicate: NSPredicate, options: Options = []) {
        self.init(recordType: recordType, predicate: predicate, subscriptionID: UUID().uuidString, options: options)
    }
}

extension CKRecordZoneSubscription {
    /// A zone subscription with a generated ID.
    public convenience init(zoneID: CKRecordZone.ID) { self.init(zoneID: zoneID, subscriptionID: UUID().uuidString) }
}

extension CKDatabaseSubscription {
    /// A database subscription with a generated ID.
    public convenience init() { self.init(subscriptionID: UUID().uuidString) }
}

extension CKDatabase {
    /// Saves (creating or replacing) and deletes subscriptions.
    public func modifySubscriptions(saving subscriptionsToSave: [CKSubscription], deleting subscriptionIDsToDelete: [CKSubscription.ID])
        async throws -> (saveResults: [CKSubscription.ID: Result<CKSubscription, any Error>],
                         deleteResults: [CKSubscription.ID: Result<Void, any Error>]) {
        let database = try nimbusDatabase()
        let results: [Result<Subscription?, NimbusError>]
        do {
            results = try await database.modifySubscriptions(saving: try subscriptionsToSave.map { try $0.nimbusSubscription() },
                                                             deleting: subscriptionIDsToDelete)
        } catch {
            throw CKError(error)
        }
        var saveResults: [CKSubscription.ID: Result<CKSubscription, any Error>] = [:]
        var deleteResults: [CKSubscription.ID: Result<Void, any Error>] = [:]
        for (index, result) in results.enumerated() {
            if index < subscriptionsToSave.count {
                let sent = subscriptionsToSave[index]
                saveResults[sent.subscriptionID] = result.map { saved in
                    guard let saved else { return sent }
                    let made = CKSubscription.from(saved)
                    made.notificationInfo?.category = sent.notificationInfo?.category
                    return made
                }.mapError { CKError($0) }
            } else {
                deleteResults[subscriptionIDsToDelete[index - subscriptionsToSave.count]] = result.map { _ in () }.mapError { CKError($0) }
            }
        }
        return (saveResults, deleteResults)
    }

    public func modifySubscriptions(saving subscriptionsToSave: [CKSubscription], deleting subscriptionIDsToDelete: [CKSubscription.ID],
                                    completionHandler: @escaping (Result<(saveResults: [CKSubscription.ID: Result<CKSubscription, any Error>],
                                                                          deleteResults: [CKSubscription.ID: Result<Void, any Error>]),
                                                                         any Error>) -> Void) {
        NimbusCK.completeResult({ try await self.modifySubscriptions(saving: subscriptionsToSave, deleting: subscriptionIDsToDelete) },
                                completionHandler)
    }

    /// One subscription; `unknownItem` when there is none with that ID.
    public func subscription(for subscriptionID: CKSubscription.ID) async throws -> CKSubscription {
        guard let result = try await subscriptions(for: [subscriptionID])[subscriptionID] else { throw CKError(.internalError) }
        return try result.get()
    }

    public func subscriptions(for ids: [CKSubscription.ID]) async throws -> [CKSubscription.ID: Result<CKSubscription, any Error>] {
        let database = try nimbusDatabase()
        let results: [Result<Subscription, NimbusError>]
        do { results = try await database.lookupSubscriptions(ids) } catch { throw CKError(error) }
        var byID: [CKSubscription.ID: Result<CKSubscription, any Error>] = [:]
        for (id, result) in zip(ids, results) { byID[id] = result.map(CKSubscription.from).mapError { CKError($0) } }
        return byID
    }

    public func fetch(withSubscriptionID subscriptionID: CKSubscription.ID,
                      completionHandler: @escaping (CKSubscription?, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.subscription(for: subscriptionID) }, completionHandler)
    }
}
