import Foundation
import Testing
@testable import NimbusKit

/// Push payloads as the server's sender builds them (docs/api.md "Push to sleeping devices"),
/// decoded through JSONSerialization as Apple hands `userInfo` over.
func pushPayload(_ nimbus: String, aps: String = #"{"alert": {"title": "Blocked", "body": "Safari"}, "mutable-content": 1}"#)
    -> [AnyHashable: Any] {
    let text = #"{"aps": \#(aps), "nimbus": \#(nimbus)}"#
    guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return [:] }
    var userInfo: [AnyHashable: Any] = [:]
    for (key, value) in object { userInfo[key] = value }
    return userInfo
}

let queryPush = #"""
{"notificationID": "n-1", "subscriptionID": "blocked", "notificationType": "query", "reason": "recordCreated",
 "recordName": "r-1", "recordType": "BlockedAppEvent", "zoneID": {"zoneName": "events"},
 "fields": {"appName": {"value": "Safari", "type": "STRING"}, "timestamp": {"value": 1795000000000, "type": "TIMESTAMP"},
            "photoKey": {"value": "AAEC", "type": "ENCRYPTED_BYTES"}},
 "container": "iCloud.com.mirxa.AppLocker", "environment": "production", "cursor": "c-2", "futureKey": [1, 2]}
"""#

@Suite("Remote notifications")
struct RemoteNotificationTests {
    @Test func readsAQueryPushWithItsFields() throws {
        let push = try RemoteNotification(userInfo: pushPayload(queryPush))
        #expect(push.notificationID == "n-1")
        #expect(push.subscriptionID == "blocked")
        #expect(push.kind == .query)
        #expect(push.reason == .recordCreated)
        #expect(push.recordID == RecordID(recordName: "r-1", zoneID: ZoneID("events")))
        #expect(push.recordType == "BlockedAppEvent")
        #expect(push.fields["appName"] == .string("Safari"))
        #expect(push.fields["timestamp"] == .date(Date(timeIntervalSince1970: 1_795_000_000)))
        #expect(push.encryptedFields == ["photoKey": Data([0, 1, 2])])
        #expect(push.fields["photoKey"] == nil)
        #expect(!push.fieldsOmitted)
        #expect(push.container == "iCloud.com.mirxa.AppLocker")
        #expect(push.environment == "production")
        #expect(push.cursor == "c-2")
        #expect(push.alert?.title == "Blocked")
        #expect(push.alert?.body == "Safari")
        #expect(!push.contentAvailable)
    }

    /// The body the server's sender (branch push-sender) gave the APNs stand-in for AppLocker's
    /// "App Blocked" subscription, registered and published through Examples/AppLockerSync.
    @Test func readsAPayloadCapturedFromTheServersSender() throws {
        let captured = #"""
            {"aps": {"alert": {"loc-key": "appName", "title": "App Blocked"}, "content-available": 1, "mutable-content": 1,
             "sound": "default"}, "nimbus": {"alert": {"localizationKey": "appName", "soundName": "default", "title": "App Blocked"},
             "container": "iCloud.com.mirxa.AppLocker", "contentAvailable": true, "cursor": "AAAAAAAAAAEAAAAAAAAAAVdpTUGbmpnZ9CZBYZYuZFM",
             "environment": "development", "notificationID": "b2870622-6102-4072-b6bf-c8db1bdbc434", "notificationType": "query",
             "reason": "recordCreated", "recordName": "D40D600A-900B-4AB8-A7B7-CDF452A7983A", "recordType": "BlockedAppEvent",
             "subscriptionID": "sub-blocked", "zoneID": {"zoneName": "_defaultZone"}}}
            """#
        let object = try #require(try JSONSerialization.jsonObject(with: Data(captured.utf8)) as? [String: Any])
        let push = try RemoteNotification(userInfo: object)
        #expect(push.notificationID == "b2870622-6102-4072-b6bf-c8db1bdbc434")
        #expect(push.subscriptionID == "sub-blocked")
        #expect(push.kind == .query)
        #expect(push.reason == .recordCreated)
        #expect(push.recordID == RecordID(recordName: "D40D600A-900B-4AB8-A7B7-CDF452A7983A", zoneID: .default))
        #expect(push.recordType == "BlockedAppEvent")
        #expect(push.cursor == "AAAAAAAAAAEAAAAAAAAAAVdpTUGbmpnZ9CZBYZYuZFM")
        #expect(push.alert == NimbusNotification.Alert(title: "App Blocked", body: nil, localizationKey: "appName", soundName: "default"))
        #expect(push.contentAvailable)
        #expect(push.fields.isEmpty && !push.fieldsOmitted)
    }

    @Test func readsZoneAndDatabasePushesAndBackgroundOnes() throws {
        let zone = try RemoteNotification(userInfo: pushPayload(#"""
            {"notificationID": "n-2", "subscriptionID": "z", "notificationType": "zone", "reason": "recordUpdated",
             "zoneID": {"zoneName": "clips"}, "container": "c", "environment": "development", "cursor": "x"}
            """#, aps: #"{"content-available": 1}"#))
        #expect(zone.kind == .zone)
        #expect(zone.zoneID == ZoneID("clips"))
        #expect(zone.contentAvailable)
        #expect(zone.alert == nil)
        let database = try RemoteNotification(userInfo: pushPayload(#"""
            {"notificationID": "n-3", "subscriptionID": "d", "notificationType": "database",
             "container": "c", "environment": "development", "cursor": "y"}
            """#))
        #expect(database.kind == .database)
        #expect(database.reason == nil)
        #expect(database.zoneID == .default)
    }

    @Test func fieldsOmittedLeavesTheFieldsOut() throws {
        let push = try RemoteNotification(userInfo: pushPayload(#"""
            {"notificationID": "n-4", "subscriptionID": "s", "notificationType": "query", "reason": "recordUpdated",
             "recordName": "r", "recordType": "T", "fieldsOmitted": true, "container": "c", "environment": "production", "cursor": "z"}
            """#))
        #expect(push.fieldsOmitted)
        #expect(push.fields.isEmpty)
    }

    @Test func malformedPushesSayWhatIsWrong() {
        let cases: [([AnyHashable: Any], String)] = [
            (["aps": ["alert": "hi"]], "nimbus"),
            (pushPayload(#"{"subscriptionID": "s", "notificationType": "query", "reason": "recordCreated", "container": "c", "environment": "e", "cursor": "x"}"#), "notificationID"),
            (pushPayload(#"{"notificationID": "n", "subscriptionID": "s", "notificationType": "record", "container": "c", "environment": "e", "cursor": "x"}"#), "notificationType"),
            (pushPayload(#"{"notificationID": "n", "subscriptionID": "s", "notificationType": "query", "container": "c", "environment": "e", "cursor": "x"}"#), "reason"),
            (pushPayload(#"{"notificationID": "n", "subscriptionID": "s", "notificationType": "query", "reason": "recordMoved", "container": "c", "environment": "e", "cursor": "x"}"#), "reason"),
            (pushPayload(#"{"notificationID": "n", "subscriptionID": "s", "notificationType": "zone", "reason": "recordCreated", "container": "c", "environment": "e"}"#), "cursor"),
            (pushPayload(#"{"notificationID": 7, "subscriptionID": "s", "notificationType": "zone", "container": "c", "environment": "e", "cursor": "x"}"#), "notificationID"),
        ]
        for (userInfo, named) in cases {
            do {
                _ = try RemoteNotification(userInfo: userInfo)
                Issue.record("accepted a push without a good \(named)")
            } catch let error as NimbusError {
                #expect(error.code == .invalidArguments)
                #expect(error.reason.contains(named), "\(error.reason)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    @Test func apnsTokensTravelAsLowerCaseHex() {
        #expect(Data([0x00, 0x0f, 0xa0, 0xff]).nimbusHexString == "000fa0ff")
        #expect(Data().nimbusHexString == "")
    }

    @Test func theServiceExtensionHelperComposesOpensAndFallsBack() async {
        struct Opener: PushFieldOpener {
            func open(field: String, ciphertext: Data, of notification: RemoteNotification) throws -> RecordValue? {
                ciphertext == Data([0, 1, 2]) ? .string("key-\(field)") : nil
            }
        }
        let compose: NotificationServiceHelper.Compose = { push, fields in
            guard let app = fields["appName"]?.stringValue, let key = fields["photoKey"]?.stringValue else { return nil }
            return BannerText(title: "Failed unlock: \(app)", body: "\(push.recordType ?? "") \(key)")
        }
        let opened = await NotificationServiceHelper(database: nil, opener: Opener(), compose: compose).banner(for: pushPayload(queryPush))
        #expect(opened == BannerText(title: "Failed unlock: Safari", body: "BlockedAppEvent key-photoKey"))
        // No key: the push's own alert text.
        let locked = await NotificationServiceHelper(database: nil, compose: compose).banner(for: pushPayload(queryPush))
        #expect(locked == BannerText(title: "Blocked", body: "Safari"))
        // Neither: the generic text; not a Nimbus push: the generic text.
        let generic = BannerText(title: "G", body: "B")
        let bare = await NotificationServiceHelper(database: nil, generic: generic, compose: compose)
            .banner(for: pushPayload(queryPush, aps: #"{"content-available": 1}"#))
        #expect(bare == generic)
        #expect(await NotificationServiceHelper(database: nil, generic: generic, compose: compose).banner(for: ["aps": [:]]) == generic)
    }
}
