import Foundation
import Testing
@testable import NimbusKit
@testable import NimbusKitCK

/// CloudKit's names that need no server: errors made by apps, zone and record names, KVC,
/// subscription inits without an ID, the container's defaults.
@Suite("NimbusKitCK names")
struct CloudKitNamesTests {
    @Test func errorsAreMadeAndReadAsCloudKitDoes() {
        let busy = CKError(.zoneBusy, userInfo: [CKErrorRetryAfterKey: NSNumber(value: 2.5)])
        #expect(busy.code == .zoneBusy && busy.errorCode == CKError.Code.zoneBusy.rawValue)
        #expect(busy.retryAfterSeconds == 2.5)
        #expect(CKError.errorDomain == CKErrorDomain)
        #expect(CKError.zoneBusy ~= busy && !(CKError.unknownItem ~= busy))
        let partial = CKError(.partialFailure, userInfo: [CKPartialErrorsByItemIDKey: [CKRecord.ID(recordName: "a"): busy] as [AnyHashable: any Error]])
        #expect((partial.partialErrorsByItemID?[CKRecord.ID(recordName: "a")] as? CKError)?.code == .zoneBusy)
        #expect(ContactsSync.retryDelay(for: partial) == 2.5, "a sample's retry logic reads the partial error's retry-after")
        let client = CKRecord(recordType: "T")
        let conflict = CKError(.serverRecordChanged, userInfo: [CKRecordChangedErrorClientRecordKey: client])
        #expect(conflict.clientRecord === client && conflict.serverRecord == nil && conflict.ancestorRecord == nil)
        #expect(CKError(NimbusError(.networkFailure, reason: "x")).code == .networkFailure)
    }

    @Test func zonesRecordsAndSubscriptionsHaveCloudKitsNames() {
        #expect(CKRecordZone.default().zoneID == CKRecordZone.ID.default)
        #expect(CKRecordZone.ID.default.zoneName == CKRecordZone.ID.defaultZoneName)
        #expect(CKRecordZone.ID(zoneName: "Z").ownerName == CKCurrentUserDefaultName)
        let record = CKRecord(recordType: "Contact" as CKRecord.RecordType)
        record.setValuesForKeys(["name": "Ada", "age": 36, "bad": NSObject()])
        #expect(record.value(forKey: "name") as? String == "Ada" && record["age"] as? Int == 36 && record["bad"] == nil)
        #expect(record.creatorUserRecordID == nil && record.lastModifiedUserRecordID == nil)
        record.setParent(CKRecord.ID(recordName: "folder"))
        #expect(record.parent?.recordID.recordName == "folder")
        let action: CKRecord.ReferenceAction = .deleteSelf
        #expect(CKRecord.Reference(recordID: record.recordID, action: action).action == .deleteSelf)
        #expect(CKRecord.SystemFieldKey.parent == "parent")
        let query = CKQuerySubscription(recordType: "Contact", predicate: NSPredicate(value: true), options: [.firesOnRecordCreation])
        let zone = CKRecordZoneSubscription(zoneID: CKRecordZone.ID(zoneName: "Z"))
        let database = CKDatabaseSubscription()
        #expect(Set([query.subscriptionID, zone.subscriptionID, database.subscriptionID]).count == 3)
        let info = CKSubscription.NotificationInfo()
        info.category = "contacts"
        #expect(info.category == "contacts")
    }

    @Test func containersHaveCloudKitsDefaults() async throws {
        let container = CKContainer(identifier: "iCloud.x", configuration: NimbusConfiguration(serverURL: URL(fileURLWithPath: "/"), token: "t"))
        #expect(container.nimbusContainer != nil && container.containerIdentifier == "iCloud.x")
        #expect(container.database(with: .private).databaseScope == .private)
        #expect(container.publicCloudDatabase.databaseScope == .public)
        #expect(CKContainer.default().containerIdentifier?.isEmpty == false)
        #expect(Notification.Name.CKAccountChanged.rawValue == "CKAccountChanged")
        await #expect(throws: CKError.self) { try await container.sharedCloudDatabase.allRecordZones() }
    }

    @Test func anOperationWithoutADatabaseFailsItsBlocks() async {
        let operation = CKFetchRecordsOperation(recordIDs: [CKRecord.ID(recordName: "a")])
        let error: CKError? = await withCheckedContinuation { continuation in
            operation.fetchRecordsResultBlock = { result in
                if case .failure(let error) = result { continuation.resume(returning: error as? CKError) } else { continuation.resume(returning: nil) }
            }
            OperationQueue().addOperation(operation)
        }
        #expect(error?.code == .invalidArguments)
    }
}
