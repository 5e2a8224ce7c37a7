// Issue #32's list of CloudKit signatures, each used once as CloudKit's documentation declares it
// (explicit closure and result types, so a drifted signature does not compile). Compiling this
// file is the check; the test below runs the parts that need no server.
import Foundation
import Testing
import NimbusKitCK // was: import CloudKit

enum Issue32Probe {
    static func operations(_ database: CKDatabase, token: CKServerChangeToken?, cursor: CKQueryOperation.Cursor) {
        let modify = CKModifyRecordsOperation(recordsToSave: [CKRecord(recordType: "T")], recordIDsToDelete: nil)
        modify.savePolicy = .changedKeys
        modify.isAtomic = false
        modify.perRecordSaveBlock = { (_: CKRecord.ID, _: Result<CKRecord, any Error>) in }
        modify.perRecordDeleteBlock = { (_: CKRecord.ID, _: Result<Void, any Error>) in }
        modify.modifyRecordsResultBlock = { (_: Result<Void, any Error>) in }
        modify.modifyRecordsCompletionBlock = { (_: [CKRecord]?, _: [CKRecord.ID]?, _: (any Error)?) in }
        database.add(modify)

        let query = CKQueryOperation(query: CKQuery(recordType: "T", predicate: NSPredicate(value: true)))
        query.resultsLimit = CKQueryOperation.maximumResults
        query.desiredKeys = ["a"]
        query.recordMatchedBlock = { (_: CKRecord.ID, _: Result<CKRecord, any Error>) in }
        query.queryResultBlock = { (_: Result<CKQueryOperation.Cursor?, any Error>) in }
        query.recordFetchedBlock = { (_: CKRecord) in }
        query.queryCompletionBlock = { (_: CKQueryOperation.Cursor?, _: (any Error)?) in }
        database.add(CKQueryOperation(cursor: cursor))

        let zoneID = CKRecordZone.ID(zoneName: "Z", ownerName: CKCurrentUserDefaultName)
        let configuration = CKFetchRecordZoneChangesOperation.ZoneConfiguration(previousServerChangeToken: token, resultsLimit: 10, desiredKeys: nil)
        let changes = CKFetchRecordZoneChangesOperation(recordZoneIDs: [zoneID], configurationsByRecordZoneID: [zoneID: configuration])
        changes.fetchAllChanges = true
        changes.recordWasChangedBlock = { (_: CKRecord.ID, _: Result<CKRecord, any Error>) in }
        changes.recordWithIDWasDeletedBlock = { (_: CKRecord.ID, _: CKRecord.RecordType) in }
        changes.recordZoneChangeTokensUpdatedBlock = { (_: CKRecordZone.ID, _: CKServerChangeToken?, _: Data?) in }
        changes.recordZoneFetchResultBlock = { (_: CKRecordZone.ID,
                                                _: Result<(serverChangeToken: CKServerChangeToken, clientChangeTokenData: Data?, moreComing: Bool),
                                                          any Error>) in }
        changes.fetchRecordZoneChangesResultBlock = { (_: Result<Void, any Error>) in }
        changes.recordChangedBlock = { (_: CKRecord) in }
        changes.recordZoneFetchCompletionBlock = { (_: CKRecordZone.ID, _: CKServerChangeToken?, _: Data?, _: Bool, _: (any Error)?) in }
        changes.fetchRecordZoneChangesCompletionBlock = { (_: (any Error)?) in }
        database.add(changes)

        let databaseChanges = CKFetchDatabaseChangesOperation(previousServerChangeToken: token)
        databaseChanges.recordZoneWithIDChangedBlock = { (_: CKRecordZone.ID) in }
        databaseChanges.recordZoneWithIDWasDeletedBlock = { (_: CKRecordZone.ID) in }
        databaseChanges.changeTokenUpdatedBlock = { (_: CKServerChangeToken) in }
        databaseChanges.fetchDatabaseChangesResultBlock = { (_: Result<(serverChangeToken: CKServerChangeToken, moreComing: Bool), any Error>) in }
        databaseChanges.fetchDatabaseChangesCompletionBlock = { (_: CKServerChangeToken?, _: Bool, _: (any Error)?) in }
        database.add(databaseChanges)

        let zones = CKModifyRecordZonesOperation(recordZonesToSave: [CKRecordZone(zoneID: zoneID)], recordZoneIDsToDelete: nil)
        zones.perRecordZoneSaveBlock = { (_: CKRecordZone.ID, _: Result<CKRecordZone, any Error>) in }
        zones.modifyRecordZonesCompletionBlock = { (_: [CKRecordZone]?, _: [CKRecordZone.ID]?, _: (any Error)?) in }
        database.add(zones)
        let subscriptions = CKModifySubscriptionsOperation(subscriptionsToSave: [CKDatabaseSubscription()], subscriptionIDsToDelete: nil)
        subscriptions.perSubscriptionSaveBlock = { (_: CKSubscription.ID, _: Result<CKSubscription, any Error>) in }
        subscriptions.modifySubscriptionsResultBlock = { (_: Result<Void, any Error>) in }
        database.add(subscriptions)

        let fetchZones = CKFetchRecordZonesOperation.fetchAllRecordZonesOperation()
        fetchZones.perRecordZoneResultBlock = { (_: CKRecordZone.ID, _: Result<CKRecordZone, any Error>) in }
        fetchZones.fetchRecordZonesResultBlock = { (_: Result<Void, any Error>) in }
        fetchZones.fetchRecordZonesCompletionBlock = { (_: [CKRecordZone.ID: CKRecordZone]?, _: (any Error)?) in }
        database.add(CKFetchRecordZonesOperation(recordZoneIDs: [zoneID]))
        let fetchSubscriptions = CKFetchSubscriptionsOperation.fetchAllSubscriptionsOperation()
        fetchSubscriptions.perSubscriptionResultBlock = { (_: CKSubscription.ID, _: Result<CKSubscription, any Error>) in }
        fetchSubscriptions.fetchSubscriptionsResultBlock = { (_: Result<Void, any Error>) in }
        fetchSubscriptions.fetchSubscriptionCompletionBlock = { (_: [CKSubscription.ID: CKSubscription]?, _: (any Error)?) in }
        database.add(CKFetchSubscriptionsOperation(subscriptionIDs: ["s"]))
    }

    static func asyncCalls(_ container: CKContainer, token: CKServerChangeToken?) async throws {
        let database: CKDatabase = container.database(with: .private)
        let zone: CKRecordZone = try await database.save(CKRecordZone(zoneName: "Z"))
        let _: (saveResults: [CKRecordZone.ID: Result<CKRecordZone, any Error>], deleteResults: [CKRecordZone.ID: Result<Void, any Error>])
            = try await database.modifyRecordZones(saving: [zone], deleting: [])
        let _: [CKRecordZone] = try await database.allRecordZones()
        let _: CKRecordZone = try await database.recordZone(for: zone.zoneID)
        let _: CKRecordZone.ID = try await database.deleteRecordZone(withID: zone.zoneID)
        let _: CKRecordZone = CKRecordZone.default()
        let changes = try await database.databaseChanges(since: token)
        let _: [CKDatabase.DatabaseChange.Modification] = changes.modifications
        let _: [CKDatabase.DatabaseChange.Deletion] = changes.deletions
        let _: CKServerChangeToken = changes.changeToken
        let _: [CKRecord.ID: Result<CKRecord, any Error>] = try await database.records(for: [CKRecord.ID(recordName: "a")], desiredKeys: nil)
        let _: (saveResults: [CKSubscription.ID: Result<CKSubscription, any Error>], deleteResults: [CKSubscription.ID: Result<Void, any Error>])
            = try await database.modifySubscriptions(saving: [CKRecordZoneSubscription(zoneID: zone.zoneID)], deleting: [])
        let _: CKSubscription = try await database.subscription(for: "s")
        let _: CKRecord.ID = try await container.userRecordID()
    }

    static func completionCalls(_ database: CKDatabase) {
        database.fetch(withQuery: CKQuery(recordType: "T", predicate: NSPredicate(value: true)), inZoneWith: nil, desiredKeys: nil,
                       resultsLimit: CKQueryOperation.maximumResults) { (_: Result<(matchResults: [(CKRecord.ID, Result<CKRecord, any Error>)],
                                                                                      queryCursor: CKQueryOperation.Cursor?), any Error>) in }
        database.fetch(withRecordIDs: [CKRecord.ID(recordName: "a")], desiredKeys: nil) { (_: Result<[CKRecord.ID: Result<CKRecord, any Error>],
                                                                                                      any Error>) in }
        database.modifyRecords(saving: [], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: true) {
            (_: Result<(saveResults: [CKRecord.ID: Result<CKRecord, any Error>], deleteResults: [CKRecord.ID: Result<Void, any Error>]), any Error>) in
        }
    }

    static func records() throws -> (CKRecord, CKRecord?) {
        let record = CKRecord(recordType: "Contact" as CKRecord.RecordType, recordID: CKRecord.ID(recordName: "ada"))
        record.setValuesForKeys(["name": "Ada"])
        record.setParent(CKRecord.ID(recordName: "folder"))
        let _: CKRecord.Reference? = record.parent
        let _: CKRecord.ID? = record.creatorUserRecordID
        let _: CKRecord.ID? = record.lastModifiedUserRecordID
        let _: CKRecord.FieldKey = CKRecord.SystemFieldKey.parent
        let _: CKRecord.ReferenceAction = .deleteSelf
        let copy = record.copy() as? CKRecord
        let coder = NSKeyedArchiver(requiringSecureCoding: true)
        record.encodeSystemFields(with: coder)
        coder.finishEncoding()
        let decoder = try NSKeyedUnarchiver(forReadingFrom: coder.encodedData)
        decoder.requiresSecureCoding = true
        let restored = CKRecord(coder: decoder)
        #expect(copy?.recordID == record.recordID)
        return (record, restored)
    }

    static func subscriptionsAndErrors() -> [Any] {
        let info = CKSubscription.NotificationInfo()
        info.category = "c"
        let query = CKQuerySubscription(recordType: "T", predicate: NSPredicate(format: "tags CONTAINS %@ AND ANY tags == %@ AND NOT (n IN %@) AND d > %@ AND x > %d",
                                                                                "a", "b", ["c"], Date() as NSDate, 1),
                                        options: [.firesOnRecordCreation])
        query.notificationInfo = info
        let notification: CKNotification? = CKNotification(fromRemoteNotificationDictionary: [:])
        let queryNotification = notification as? CKQueryNotification
        let _: CKRecord.ID? = queryNotification?.recordID
        let error = CKError(.partialFailure, userInfo: [CKErrorRetryAfterKey: NSNumber(value: 1)])
        let _: CKRecord? = error.clientRecord
        let _: CKRecord? = error.ancestorRecord
        let _: CKRecord? = error.serverRecord
        let _: [AnyHashable: any Error]? = error.partialErrorsByItemID
        let _: CKError = CKError(.serverRecordChanged)
        let _: Notification.Name = .CKAccountChanged
        let _: CKContainer = CKContainer.default()
        return [query, CKRecordZoneSubscription(zoneID: .default), CKDatabaseSubscription(), error]
    }
}

@Suite("NimbusKitCK issue #32 probe")
struct CloudKitIssueProbeTests {
    @Test func theListedNamesThatNeedNoServerWork() throws {
        let (record, restored) = try Issue32Probe.records()
        #expect(restored?.recordID == record.recordID && restored?.parent?.recordID.recordName == "folder")
        #expect(Issue32Probe.subscriptionsAndErrors().count == 4)
    }
}
