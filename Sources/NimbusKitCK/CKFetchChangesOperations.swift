import Foundation

/// Fetches the changes of zones since their tokens, page by page.
public final class CKFetchRecordZoneChangesOperation: CKDatabaseOperation, @unchecked Sendable {
    /// Where one zone's fetch starts and what it returns.
    public final class ZoneConfiguration: NSObject, @unchecked Sendable {
        // Safe: configured before the operation starts.
        public var previousServerChangeToken: CKServerChangeToken?
        public var resultsLimit: Int = 0
        public var desiredKeys: [CKRecord.FieldKey]?

        public override init() { super.init() }

        public convenience init(previousServerChangeToken: CKServerChangeToken? = nil, resultsLimit: Int? = nil,
                                desiredKeys: [CKRecord.FieldKey]? = nil) {
            self.init()
            self.previousServerChangeToken = previousServerChangeToken
            self.resultsLimit = resultsLimit ?? 0
            self.desiredKeys = desiredKeys
        }
    }

    public typealias ZoneResult = (serverChangeToken: CKServerChangeToken, clientChangeTokenData: Data?, moreComing: Bool)

    public var recordZoneIDs: [CKRecordZone.ID]?
    public var configurationsByRecordZoneID: [CKRecordZone.ID: ZoneConfiguration]?
    /// True: keep fetching while the server says more is coming; false: one page per zone.
    public var fetchAllChanges = true
    public var recordWasChangedBlock: ((CKRecord.ID, Result<CKRecord, any Error>) -> Void)?
    public var recordWithIDWasDeletedBlock: ((CKRecord.ID, CKRecord.RecordType) -> Void)?
    public var recordZoneChangeTokensUpdatedBlock: ((CKRecordZone.ID, CKServerChangeToken?, Data?) -> Void)?
    public var recordZoneFetchResultBlock: ((CKRecordZone.ID, Result<ZoneResult, any Error>) -> Void)?
    public var fetchRecordZoneChangesResultBlock: ((Result<Void, any Error>) -> Void)?
    /// The pre-iOS 15 blocks.
    public var recordChangedBlock: ((CKRecord) -> Void)?
    public var recordZoneFetchCompletionBlock: ((CKRecordZone.ID, CKServerChangeToken?, Data?, Bool, (any Error)?) -> Void)?
    public var fetchRecordZoneChangesCompletionBlock: (((any Error)?) -> Void)?

    public override init() { super.init() }

    public convenience init(recordZoneIDs: [CKRecordZone.ID], configurationsByRecordZoneID: [CKRecordZone.ID: ZoneConfiguration]? = nil) {
        self.init()
        self.recordZoneIDs = recordZoneIDs
        self.configurationsByRecordZoneID = configurationsByRecordZoneID
    }

    override func execute() async {
        let database: CKDatabase
        do { database = try targetDatabase() } catch {
            let error = CKError(error)
            fetchRecordZoneChangesResultBlock?(.failure(error))
            fetchRecordZoneChangesCompletionBlock?(error)
            return
        }
        var errors: [AnyHashable: any Error] = [:]
        for zoneID in recordZoneIDs ?? [] {
            let configuration = configurationsByRecordZoneID?[zoneID]
            var token = configuration?.previousServerChangeToken
            do {
                while true {
                    let limit = configuration.map(\.resultsLimit).flatMap { $0 > 0 ? $0 : nil }
                    let page = try await database.recordZoneChanges(inZoneWith: zoneID, since: token, desiredKeys: configuration?.desiredKeys,
                                                                    resultsLimit: limit)
                    for (id, result) in page.modificationResultsByID {
                        let record = result.map(\.record)
                        recordWasChangedBlock?(id, record)
                        if case .success(let changed) = record { recordChangedBlock?(changed) }
                    }
                    for deletion in page.deletions { recordWithIDWasDeletedBlock?(deletion.recordID, deletion.recordType) }
                    token = page.changeToken
                    if page.moreComing && fetchAllChanges && !isCancelled {
                        recordZoneChangeTokensUpdatedBlock?(zoneID, page.changeToken, nil)
                        continue
                    }
                    recordZoneFetchResultBlock?(zoneID, .success((page.changeToken, nil, page.moreComing)))
                    recordZoneFetchCompletionBlock?(zoneID, page.changeToken, nil, page.moreComing, nil)
                    break
                }
            } catch {
                let error = CKError(error)
                errors[zoneID] = error
                recordZoneFetchResultBlock?(zoneID, .failure(error))
                recordZoneFetchCompletionBlock?(zoneID, token, nil, false, error)
            }
        }
        let partial = CKError.partial(errors)
        fetchRecordZoneChangesResultBlock?(partial.map { .failure($0) } ?? .success(()))
        fetchRecordZoneChangesCompletionBlock?(partial)
    }
}

/// Fetches which zones changed or were deleted since a database token.
public final class CKFetchDatabaseChangesOperation: CKDatabaseOperation, @unchecked Sendable {
    public var previousServerChangeToken: CKServerChangeToken?
    public var resultsLimit: Int = 0
    public var fetchAllChanges = true
    public var recordZoneWithIDChangedBlock: ((CKRecordZone.ID) -> Void)?
    public var recordZoneWithIDWasDeletedBlock: ((CKRecordZone.ID) -> Void)?
    public var recordZoneWithIDWasPurgedBlock: ((CKRecordZone.ID) -> Void)?
    public var recordZoneWithIDWasDeletedDueToUserEncryptedDataResetBlock: ((CKRecordZone.ID) -> Void)?
    public var changeTokenUpdatedBlock: ((CKServerChangeToken) -> Void)?
    public var fetchDatabaseChangesResultBlock: ((Result<(serverChangeToken: CKServerChangeToken, moreComing: Bool), any Error>) -> Void)?
    /// The pre-iOS 15 block.
    public var fetchDatabaseChangesCompletionBlock: ((CKServerChangeToken?, Bool, (any Error)?) -> Void)?

    public override init() { super.init() }

    public convenience init(previousServerChangeToken: CKServerChangeToken?) {
        self.init()
        self.previousServerChangeToken = previousServerChangeToken
    }

    override func execute() async {
        var token = previousServerChangeToken
        do {
            let database = try targetDatabase()
            while true {
                let page = try await database.databaseChanges(since: token, resultsLimit: resultsLimit > 0 ? resultsLimit : nil)
                for change in page.modifications { recordZoneWithIDChangedBlock?(change.zoneID) }
                for deletion in page.deletions { recordZoneWithIDWasDeletedBlock?(deletion.zoneID) }
                token = page.changeToken
                if page.moreComing && fetchAllChanges && !isCancelled {
                    changeTokenUpdatedBlock?(page.changeToken)
                    continue
                }
                fetchDatabaseChangesResultBlock?(.success((page.changeToken, page.moreComing)))
                fetchDatabaseChangesCompletionBlock?(page.changeToken, page.moreComing, nil)
                return
            }
        } catch {
            let error = CKError(error)
            fetchDatabaseChangesResultBlock?(.failure(error))
            fetchDatabaseChangesCompletionBlock?(token, false, error)
        }
    }
}
