// The compile probe: sync code written the way CloudKit's sample code and apps write it (operations
// with blocks, a custom zone, archived change tokens and system fields, conflict handling through
// CKError's user info), with only the import changed. CloudKitBehaviourTests runs it against the
// real server.
import Foundation
import NimbusKitCK // was: import CloudKit

final class ContactsSync: @unchecked Sendable {
    // Safe for the tests: one test drives one instance from one task at a time.
    let container: CKContainer
    lazy var database = container.privateCloudDatabase
    let zone = CKRecordZone(zoneName: "Contacts")
    static let contactType: CKRecord.RecordType = "Contact"
    static let nameKey: CKRecord.FieldKey = "name"

    private(set) var databaseChangeTokenData: Data?
    private(set) var zoneChangeTokenData: Data?
    private(set) var contacts: [CKRecord.ID: CKRecord] = [:]
    private(set) var deletedIDs: [CKRecord.ID] = []

    init(container: CKContainer) { self.container = container }

    // MARK: Zone

    func createZoneIfNeeded(completionHandler: @escaping ((any Error)?) -> Void) {
        let operation = CKModifyRecordZonesOperation(recordZonesToSave: [zone], recordZoneIDsToDelete: nil)
        operation.modifyRecordZonesResultBlock = { result in
            switch result {
            case .success: completionHandler(nil)
            case .failure(let error): completionHandler(error)
            }
        }
        operation.qualityOfService = .userInitiated
        database.add(operation)
    }

    // MARK: Tokens, archived the CloudKit way

    static func archive(_ token: CKServerChangeToken) throws -> Data {
        try NSKeyedArchiver.archivedData(withRootObject: token, requiringSecureCoding: true)
    }

    static func unarchiveToken(_ data: Data?) -> CKServerChangeToken? {
        guard let data else { return nil }
        return try? NSKeyedUnarchiver.unarchivedObject(ofClass: CKServerChangeToken.self, from: data)
    }

    static func systemFields(of record: CKRecord) -> Data {
        let coder = NSKeyedArchiver(requiringSecureCoding: true)
        record.encodeSystemFields(with: coder)
        coder.finishEncoding()
        return coder.encodedData
    }

    static func record(fromSystemFields data: Data) -> CKRecord? {
        guard let unarchiver = try? NSKeyedUnarchiver(forReadingFrom: data) else { return nil }
        unarchiver.requiresSecureCoding = true
        return CKRecord(coder: unarchiver)
    }

    // MARK: Fetch

    func fetchDatabaseChanges(completionHandler: @escaping (Result<[CKRecordZone.ID], any Error>) -> Void) {
        var changedZoneIDs: [CKRecordZone.ID] = []
        let operation = CKFetchDatabaseChangesOperation(previousServerChangeToken: ContactsSync.unarchiveToken(databaseChangeTokenData))
        operation.recordZoneWithIDChangedBlock = { zoneID in changedZoneIDs.append(zoneID) }
        operation.recordZoneWithIDWasDeletedBlock = { _ in }
        operation.changeTokenUpdatedBlock = { token in self.databaseChangeTokenData = try? ContactsSync.archive(token) }
        operation.fetchDatabaseChangesResultBlock = { result in
            switch result {
            case .success((let token, _)):
                self.databaseChangeTokenData = try? ContactsSync.archive(token)
                completionHandler(.success(changedZoneIDs))
            case .failure(let error):
                completionHandler(.failure(error))
            }
        }
        database.add(operation)
    }

    func fetchZoneChanges(completionHandler: @escaping ((any Error)?) -> Void) {
        let configuration = CKFetchRecordZoneChangesOperation.ZoneConfiguration()
        configuration.previousServerChangeToken = ContactsSync.unarchiveToken(zoneChangeTokenData)
        let operation = CKFetchRecordZoneChangesOperation(recordZoneIDs: [zone.zoneID],
                                                          configurationsByRecordZoneID: [zone.zoneID: configuration])
        operation.recordWasChangedBlock = { recordID, result in
            if case .success(let record) = result { self.contacts[recordID] = record }
        }
        operation.recordWithIDWasDeletedBlock = { recordID, _ in
            self.contacts[recordID] = nil
            self.deletedIDs.append(recordID)
        }
        operation.recordZoneFetchResultBlock = { _, result in
            if case .success((let token, _, _)) = result { self.zoneChangeTokenData = try? ContactsSync.archive(token) }
        }
        operation.fetchRecordZoneChangesResultBlock = { result in
            switch result {
            case .success: completionHandler(nil)
            case .failure(let error):
                if let ckError = error as? CKError, ckError.code == .changeTokenExpired { self.zoneChangeTokenData = nil }
                completionHandler(error)
            }
        }
        database.add(operation)
    }

    // MARK: Save, resolving conflicts with the server's record

    /// Saves contacts; a conflict takes the server's record, applies our name to it and saves again.
    func save(_ records: [CKRecord], completionHandler: @escaping (Result<[CKRecord], any Error>) -> Void) {
        var saved: [CKRecord] = []
        var retry: [CKRecord] = []
        let operation = CKModifyRecordsOperation(recordsToSave: records, recordIDsToDelete: nil)
        operation.savePolicy = .ifServerRecordUnchanged
        operation.perRecordSaveBlock = { recordID, result in
            switch result {
            case .success(let record):
                saved.append(record)
                self.contacts[recordID] = record
            case .failure(let error):
                guard let ckError = error as? CKError, ckError.code == .serverRecordChanged,
                      let serverRecord = ckError.serverRecord, let clientRecord = ckError.clientRecord else { return }
                serverRecord[ContactsSync.nameKey] = clientRecord[ContactsSync.nameKey]
                retry.append(serverRecord)
            }
        }
        operation.modifyRecordsResultBlock = { result in
            if !retry.isEmpty {
                self.save(retry) { again in completionHandler(again.map { saved + $0 }) }
                return
            }
            switch result {
            case .success: completionHandler(.success(saved))
            case .failure(let error): completionHandler(.failure(error))
            }
        }
        database.add(operation)
    }

    // MARK: Query, page by page

    func fetchAllContacts(completionHandler: @escaping (Result<[CKRecord], any Error>) -> Void) {
        let query = CKQuery(recordType: ContactsSync.contactType, predicate: NSPredicate(value: true))
        query.sortDescriptors = [NSSortDescriptor(key: ContactsSync.nameKey, ascending: true)]
        var found: [CKRecord] = []
        func run(_ operation: CKQueryOperation) {
            operation.zoneID = zone.zoneID
            operation.resultsLimit = 2
            operation.desiredKeys = [ContactsSync.nameKey]
            operation.recordMatchedBlock = { _, result in
                if case .success(let record) = result { found.append(record) }
            }
            operation.queryResultBlock = { result in
                switch result {
                case .success(let cursor?): run(CKQueryOperation(cursor: cursor))
                case .success(nil): completionHandler(.success(found))
                case .failure(let error): completionHandler(.failure(error))
                }
            }
            database.add(operation)
        }
        run(CKQueryOperation(query: query))
    }

    // MARK: Subscriptions

    func subscribeToChanges(completionHandler: @escaping ((any Error)?) -> Void) {
        let subscription = CKDatabaseSubscription()
        let notificationInfo = CKSubscription.NotificationInfo()
        notificationInfo.shouldSendContentAvailable = true
        notificationInfo.category = "contacts"
        subscription.notificationInfo = notificationInfo
        let operation = CKModifySubscriptionsOperation(subscriptionsToSave: [subscription], subscriptionIDsToDelete: nil)
        operation.modifySubscriptionsResultBlock = { result in
            if case .failure(let error) = result { completionHandler(error) } else { completionHandler(nil) }
        }
        database.add(operation)
    }

    // MARK: Errors, as apps classify them

    static func retryDelay(for error: any Error) -> TimeInterval? {
        guard let ckError = error as? CKError else { return nil }
        switch ckError.code {
        case .serviceUnavailable, .requestRateLimited, .zoneBusy:
            return (ckError.userInfo[CKErrorRetryAfterKey] as? NSNumber)?.doubleValue ?? ckError.retryAfterSeconds ?? 3
        case .partialFailure:
            return ckError.partialErrorsByItemID?.values.compactMap { retryDelay(for: $0) }.max()
        default:
            return nil
        }
    }
}
