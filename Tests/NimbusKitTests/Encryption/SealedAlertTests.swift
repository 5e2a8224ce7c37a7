import Foundation
import Testing
@testable import NimbusKit

/// A sealed alert: the push carries `ENCRYPTED_BYTES` fields; the notification service extension
/// opens them with the shared key store and writes the banner; without the key, the generic text.
@Suite("End-to-end encryption: sealed alerts")
struct SealedAlertTests {
    static let container = "iCloud.com.mirxa.AppLocker"

    func push(sealedWith ring: KeyRing) throws -> [AnyHashable: Any] {
        let device = Container(identifier: Self.container, configuration: NimbusConfiguration(serverURL: URL(string: "http://127.0.0.1:9")!, token: "t"))
        device.keyStore = MemoryKeyStore(ring)
        var record = Record(recordType: "FailedAuthEvent", id: RecordID(recordName: "event-7"))
        record.encryptedValues["deviceName"] = .string("mac-mini")
        record["appName"] = .string("Safari")
        let wireFields = try #require(try device.seal(record).wireRecord()["fields"])
        let fields = try #require(JSON.foundation(wireFields) as? [String: Any])
        let nimbus: [String: Any] = ["notificationID": "n1", "subscriptionID": "failed-unlocks", "notificationType": "query",
                                     "reason": "recordCreated", "container": Self.container, "environment": "development", "cursor": "c1",
                                     "recordName": "event-7", "zoneID": ["zoneName": "_defaultZone"], "recordType": "FailedAuthEvent",
                                     "fields": fields]
        return ["aps": ["alert": ["title": "Failed unlock"], "mutable-content": 1], "nimbus": nimbus]
    }

    func helper(_ store: any KeyStore) -> NotificationServiceHelper {
        NotificationServiceHelper(database: nil, opener: KeyStorePushOpener(containerIdentifier: Self.container, keyStore: store),
                                  generic: BannerText(title: "Failed unlock", body: "Open AppLocker to see it.")) { _, fields in
            guard let device = fields["deviceName"]?.stringValue, let app = fields["appName"]?.stringValue else { return nil }
            return BannerText(title: "Failed unlock on \(device): \(app)", body: "")
        }
    }

    @Test func theExtensionOpensTheAlertWithTheKeyStoreAndFallsBackWithoutIt() async throws {
        let ring = KeyRing([AccountKey.generate()])
        let userInfo = try push(sealedWith: ring)
        let text = String(describing: userInfo)
        #expect(!text.contains("mac-mini"))
        #expect(await helper(MemoryKeyStore(ring)).banner(for: userInfo).title == "Failed unlock on mac-mini: Safari")
        // No key, another user's key: the generic title, never garbage.
        #expect(await helper(MemoryKeyStore()).banner(for: userInfo) == BannerText(title: "Failed unlock", body: "Open AppLocker to see it."))
        #expect(await helper(MemoryKeyStore(KeyRing([AccountKey.generate()]))).banner(for: userInfo).title == "Failed unlock")
    }
}
