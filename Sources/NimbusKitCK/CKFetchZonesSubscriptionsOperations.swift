import Foundation

/// Fetches zones by ID, or every zone of the database (`fetchAllRecordZonesOperation()`).
public final class CKFetchRecordZonesOperation: CKDatabaseOperation, @unchecked Sendable {
    /// The zones to fetch; nil fetches them all.
    public var recordZoneIDs: [CKRecordZone.ID]?
    public var perRecordZoneResultBlock: ((CKRecordZone.ID, Result<CKRecordZone, any Error>) -> Void)?
    public var fetchRecordZonesResultBlock: ((Result<Void, any Error>) -> Void)?
    /// The pre-iOS 15 block.
    public var fetchRecordZonesCompletionBlock: (([CKRecordZone.ID: CKRecordZone]?, (any Error)?) -> Void)?

    public override init() { super.init() }

    public convenience init(recordZoneIDs zoneIDs: [CKRecordZone.ID]) {
        self.init()
        recordZoneIDs = zoneIDs
    }

    /// An operation that fetches every zone of the database.
    public class func fetchAllRecordZonesOperation() -> Self { Self() }

    override func execute() async {
        do {
            let database = try targetDatabase()
            let results: [(CKRecordZone.ID, Result<CKRecordZone, any Error>)]
            if let ids = recordZoneIDs {
                let byID = try await database.recordZones(for: ids)
                results = ids.map { ($0, byID[$0] ?? .failure(CKError(.internalError))) }
            } else {
                results = try await database.allRecordZones().map { ($0.zoneID, .success($0)) }
            }
            var zones: [CKRecordZone.ID: CKRecordZone] = [:]
            var errors: [AnyHashable: any Error] = [:]
            for (id, result) in results {
                perRecordZoneResultBlock?(id, result)
                switch result {
                case .success(let zone): zones[id] = zone
                case .failure(let error): errors[id] = error
                }
            }
            let partial = CKError.partial(errors)
            fetchRecordZonesResultBlock?(partial.map { .failure($0) } ?? .success(()))
            fetchRecordZonesCompletionBlock?(zones, partial)
        } catch {
            let error = CKError(error)
            fetchRecordZonesResultBlock?(.failure(error))
            fetchRecordZonesCompletionBlock?(nil, error)
        }
    }
}

/// Fetches subscriptions by ID, or every subscription of the database (`fetchAllSubscriptionsOperation()`).
public final class CKFetchSubscriptionsOperation: CKDatabaseOperation, @unchecked Sendable {
    /// The subscriptions to fetch; nil fetches them all.
    public var subscriptionIDs: [CKSubscription.ID]?
    public var perSubscriptionResultBlock: ((CKSubscription.ID, Result<CKSubscription, any Error>) -> Void)?
    public var fetchSubscriptionsResultBlock: ((Result<Void, any Error>) -> Void)?
    /// The pre-iOS 15 block (CloudKit's name is singular).
    public var fetchSubscriptionCompletionBlock: (([CKSubscription.ID: CKSubscription]?, (any Error)?) -> Void)?

    public override init() { super.init() }

    public convenience init(subscriptionIDs: [CKSubscription.ID]) {
        self.init()
        self.subscriptionIDs = subscriptionIDs
    }

    /// An operation that fetches every subscription of the database.
    public class func fetchAllSubscriptionsOperation() -> Self { Self() }

    override func execute() async {
        do {
            let database = try targetDatabase()
            let results: [(CKSubscription.ID, Result<CKSubscription, any Error>)]
            if let ids = subscriptionIDs {
                let byID = try await database.subscriptions(for: ids)
                results = ids.map { ($0, byID[$0] ?? .failure(CKError(.internalError))) }
            } else {
                results = try await database.allSubscriptions().map { ($0.subscriptionID, .success($0)) }
            }
            var subscriptions: [CKSubscription.ID: CKSubscription] = [:]
            var errors: [AnyHashable: any Error] = [:]
            for (id, result) in results {
                perSubscriptionResultBlock?(id, result)
                switch result {
                case .success(let subscription): subscriptions[id] = subscription
                case .failure(let error): errors[id] = error
                }
            }
            let partial = CKError.partial(errors)
            fetchSubscriptionsResultBlock?(partial.map { .failure($0) } ?? .success(()))
            fetchSubscriptionCompletionBlock?(subscriptions, partial)
        } catch {
            let error = CKError(error)
            fetchSubscriptionsResultBlock?(.failure(error))
            fetchSubscriptionCompletionBlock?(nil, error)
        }
    }
}
