import Foundation

/// Saves and deletes records in one request (split at the server's limits when not atomic).
public final class CKModifyRecordsOperation: CKDatabaseOperation, @unchecked Sendable {
    public typealias RecordSavePolicy = CKDatabase.SavePolicy

    public var recordsToSave: [CKRecord]?
    public var recordIDsToDelete: [CKRecord.ID]?
    public var savePolicy: RecordSavePolicy = .ifServerRecordUnchanged
    public var isAtomic = true
    public var clientChangeTokenData: Data?
    public var perRecordProgressBlock: ((CKRecord, Double) -> Void)?
    public var perRecordSaveBlock: ((CKRecord.ID, Result<CKRecord, any Error>) -> Void)?
    public var perRecordDeleteBlock: ((CKRecord.ID, Result<Void, any Error>) -> Void)?
    public var modifyRecordsResultBlock: ((Result<Void, any Error>) -> Void)?
    /// The pre-iOS 15 blocks.
    public var perRecordCompletionBlock: ((CKRecord, (any Error)?) -> Void)?
    public var modifyRecordsCompletionBlock: (([CKRecord]?, [CKRecord.ID]?, (any Error)?) -> Void)?

    public override init() { super.init() }

    public convenience init(recordsToSave: [CKRecord]? = nil, recordIDsToDelete: [CKRecord.ID]? = nil) {
        self.init()
        self.recordsToSave = recordsToSave
        self.recordIDsToDelete = recordIDsToDelete
    }

    override func execute() async {
        let saving = recordsToSave ?? []
        let deleting = recordIDsToDelete ?? []
        do {
            let results = try await targetDatabase().modifyRecords(saving: saving, deleting: deleting, savePolicy: savePolicy,
                                                                   atomically: isAtomic)
            var errors: [AnyHashable: any Error] = [:]
            var saved: [CKRecord] = []
            var deleted: [CKRecord.ID] = []
            for record in saving {
                let result = results.saveResults[record.recordID] ?? .failure(CKError(.internalError))
                perRecordProgressBlock?(record, 1)
                perRecordSaveBlock?(record.recordID, result)
                switch result {
                case .success(let server):
                    saved.append(server)
                    perRecordCompletionBlock?(server, nil)
                case .failure(let error):
                    errors[record.recordID] = error
                    perRecordCompletionBlock?(record, error)
                }
            }
            for id in deleting {
                let result = results.deleteResults[id] ?? .failure(CKError(.internalError))
                perRecordDeleteBlock?(id, result)
                switch result {
                case .success: deleted.append(id)
                case .failure(let error): errors[id] = error
                }
            }
            let partial = CKError.partial(errors)
            modifyRecordsResultBlock?(partial.map { .failure($0) } ?? .success(()))
            modifyRecordsCompletionBlock?(saved, deleted, partial)
        } catch {
            let error = CKError(error)
            modifyRecordsResultBlock?(.failure(error))
            modifyRecordsCompletionBlock?(nil, nil, error)
        }
    }
}

/// Fetches records by ID.
public final class CKFetchRecordsOperation: CKDatabaseOperation, @unchecked Sendable {
    public var recordIDs: [CKRecord.ID]?
    public var desiredKeys: [CKRecord.FieldKey]?
    public var perRecordProgressBlock: ((CKRecord.ID, Double) -> Void)?
    public var perRecordResultBlock: ((CKRecord.ID, Result<CKRecord, any Error>) -> Void)?
    public var fetchRecordsResultBlock: ((Result<Void, any Error>) -> Void)?
    /// The pre-iOS 15 blocks.
    public var perRecordCompletionBlock: ((CKRecord?, CKRecord.ID?, (any Error)?) -> Void)?
    public var fetchRecordsCompletionBlock: (([CKRecord.ID: CKRecord]?, (any Error)?) -> Void)?

    public override init() { super.init() }

    public convenience init(recordIDs: [CKRecord.ID]) {
        self.init()
        self.recordIDs = recordIDs
    }

    override func execute() async {
        let ids = recordIDs ?? []
        do {
            let results = try await targetDatabase().records(for: ids, desiredKeys: desiredKeys)
            var errors: [AnyHashable: any Error] = [:]
            var records: [CKRecord.ID: CKRecord] = [:]
            for id in ids {
                let result = results[id] ?? .failure(CKError(.internalError))
                perRecordProgressBlock?(id, 1)
                perRecordResultBlock?(id, result)
                switch result {
                case .success(let record):
                    records[id] = record
                    perRecordCompletionBlock?(record, id, nil)
                case .failure(let error):
                    errors[id] = error
                    perRecordCompletionBlock?(nil, id, error)
                }
            }
            let partial = CKError.partial(errors)
            fetchRecordsResultBlock?(partial.map { .failure($0) } ?? .success(()))
            fetchRecordsCompletionBlock?(records, partial)
        } catch {
            let error = CKError(error)
            fetchRecordsResultBlock?(.failure(error))
            fetchRecordsCompletionBlock?(nil, error)
        }
    }
}
