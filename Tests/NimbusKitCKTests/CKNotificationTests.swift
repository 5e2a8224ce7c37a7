import Foundation
import Testing
@testable import NimbusKit
@testable import NimbusKitCK

private func payload(_ nimbus: String, aps: String = #"{"alert": {"title": "T"}}"#) -> [AnyHashable: Any] {
    let text = #"{"aps": \#(aps), "nimbus": \#(nimbus)}"#
    guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return [:] }
    var userInfo: [AnyHashable: Any] = [:]
    for (key, value) in object { userInfo[key] = value }
    return userInfo
}

private func nimbus(_ type: String, _ extra: String = "") -> String {
    #"{"notificationID": "n-\#(type)", "subscriptionID": "s-\#(type)", "notificationType": "\#(type)", "reason": "recordDeleted", "#
        + #""recordName": "r", "recordType": "Event", "zoneID": {"zoneName": "z"}, "container": "iCloud.a", "environment": "development", "#
        + #""cursor": "c", "unknownKey": {"a": 1}\#(extra)}"#
}

/// `CKNotification(fromRemoteNotificationDictionary:)` over Nimbus pushes, as apps written for
/// CloudKit call it.
@Suite("CKNotification")
struct CKNotificationTests {
    @Test func aQueryPushBecomesACKQueryNotification() throws {
        let note = CKNotification(fromRemoteNotificationDictionary: payload(nimbus("query",
            #", "fields": {"title": {"value": "hello", "type": "STRING"}, "n": {"value": 3, "type": "INT64"}}"#)))
        let query = try #require(note as? CKQueryNotification)
        #expect(query.notificationType == .query)
        #expect(query.notificationID?.value == "n-query")
        #expect(query.subscriptionID == "s-query")
        #expect(query.containerIdentifier == "iCloud.a")
        #expect(query.queryNotificationReason == .recordDeleted)
        #expect(query.recordID == CKRecord.ID(recordName: "r", zoneID: CKRecordZone.ID(zoneName: "z")))
        #expect(query.recordFields?["title"] as? String == "hello")
        #expect(query.recordFields?["n"] as? Int64 == 3)
        #expect(query.databaseScope == .private)
        #expect(query.title == "T")
        #expect(CKQueryNotification(fromRemoteNotificationDictionary: payload(nimbus("query"))) != nil)
    }

    @Test func zoneAndDatabasePushesBecomeTheirClasses() throws {
        let zone = try #require(CKNotification(fromRemoteNotificationDictionary: payload(nimbus("zone"))) as? CKRecordZoneNotification)
        #expect(zone.notificationType == .recordZone)
        #expect(zone.recordZoneID == CKRecordZone.ID(zoneName: "z"))
        let database = try #require(CKNotification(fromRemoteNotificationDictionary: payload(nimbus("database"))) as? CKDatabaseNotification)
        #expect(database.notificationType == .database)
        #expect(database.databaseScope == .private)
        // Asked as the wrong subclass: nil, as CloudKit's cast would fail.
        #expect(CKQueryNotification(fromRemoteNotificationDictionary: payload(nimbus("zone"))) == nil)
    }

    @Test func fieldsOmittedGivesNoRecordFields() throws {
        let note = CKNotification(fromRemoteNotificationDictionary: payload(nimbus("query",
            #", "fieldsOmitted": true"#)))
        let query = try #require(note as? CKQueryNotification)
        #expect(query.recordFields == nil)
        #expect(query.nimbus.fieldsOmitted)
    }

    @Test func notANimbusPushIsNil() {
        #expect(CKNotification(fromRemoteNotificationDictionary: ["aps": ["alert": "hi"]]) == nil)
        #expect(CKNotification(fromRemoteNotificationDictionary: payload(#"{"notificationID": "n"}"#)) == nil)
        #expect(CKNotification(fromRemoteNotificationDictionary: payload(nimbus("record"))) == nil)
    }
}
