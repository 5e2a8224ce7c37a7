import Testing
import NimbusCore
import NimbusSupport

@Suite struct PushPayloadTests {
    /// A notification object as the webcourier returns it.
    func notification(alert: JSONObject? = nil, contentAvailable: Bool = false, fields: JSONObject? = nil) -> JSONValue {
        var object: JSONObject = [
            "notificationID": .string("5f0c0e4e-0000-4000-8000-000000000001"), "subscriptionID": .string("blocked"),
            "notificationType": .string("query"), "reason": .string("create"), "recordName": .string("e1"),
            "recordType": .string("BlockedAppEvent"), "zoneID": .object(["zoneName": .string("_defaultZone")]),
        ]
        if let alert { object["alert"] = .object(alert) }
        object["contentAvailable"] = .bool(contentAvailable)
        if let fields { object["fields"] = .object(fields) }
        return .object(object)
    }

    func parsed(_ payload: PushPayload, maxBytes: Int = 4096) throws -> JSONObject {
        try #require(try JSONValue.parse(payload.bytes(maxBytes: maxBytes)).objectValue)
    }

    @Test func anAlertCarriesTheSubscriptionsAlertAndTheNotification() throws {
        let payload = PushPayload(kind: .alert, notification: notification(alert: ["title": .string("Blocked"), "body": .string("Terminal"),
                                                                                   "localizationKey": .string("BLOCKED"), "soundName": .string("ping")]),
                                  container: "iCloud.a", environment: "development", cursor: "C1", badge: true)
        let object = try parsed(payload)
        #expect(object["aps"] == .object(["alert": .object(["title": .string("Blocked"), "body": .string("Terminal"), "loc-key": .string("BLOCKED")]),
                                          "sound": .string("ping"), "badge": .integer(1), "mutable-content": .integer(1)]))
        let nimbus = try #require(object["nimbus"]?.objectValue)
        #expect(nimbus["notificationID"] == .string("5f0c0e4e-0000-4000-8000-000000000001"))
        #expect(nimbus["recordType"] == .string("BlockedAppEvent"))
        #expect(nimbus["container"] == .string("iCloud.a") && nimbus["environment"] == .string("development") && nimbus["cursor"] == .string("C1"))
        #expect(nimbus["fieldsOmitted"] == nil)
    }

    @Test func anAlertHasContentAvailableOnlyWhenAskedAndNoBadgeUnlessAsked() throws {
        let plain = try parsed(PushPayload(kind: .alert, notification: notification(alert: ["title": .string("t")]),
                                           container: "c", environment: "production", cursor: "x", badge: false))
        #expect(plain["aps"] == .object(["alert": .object(["title": .string("t")]), "mutable-content": .integer(1)]))
        let both = try parsed(PushPayload(kind: .alert, notification: notification(alert: ["title": .string("t")], contentAvailable: true),
                                          container: "c", environment: "production", cursor: "x", badge: false))
        #expect(both["aps"]?.objectValue?["content-available"] == .integer(1))
    }

    @Test func aBackgroundPushHoldsOnlyContentAvailable() throws {
        let object = try parsed(PushPayload(kind: .background, notification: notification(contentAvailable: true),
                                            container: "c", environment: "production", cursor: "x", badge: true))
        #expect(object["aps"] == .object(["content-available": .integer(1)]))
    }

    @Test func fieldsThatWouldNotFitAreLeftOutWhole() throws {
        let small: JSONObject = ["appName": .object(["value": .string("Terminal"), "type": .string("STRING")])]
        let fits = PushPayload(kind: .alert, notification: notification(alert: ["title": .string("t")], fields: small),
                               container: "c", environment: "production", cursor: "x", badge: false)
        #expect(try parsed(fits)["nimbus"]?.objectValue?["fields"] == .object(small))
        let big: JSONObject = ["blob": .object(["value": .string(String(repeating: "A", count: 5_000)), "type": .string("ENCRYPTED_BYTES")]),
                               "appName": .object(["value": .string("Terminal"), "type": .string("STRING")])]
        let tooBig = PushPayload(kind: .alert, notification: notification(alert: ["title": .string("t")], fields: big),
                                 container: "c", environment: "production", cursor: "x", badge: false)
        let bytes = tooBig.bytes(maxBytes: 4096)
        #expect(bytes.count <= 4096)
        let nimbus = try #require(try JSONValue.parse(bytes).objectValue?["nimbus"]?.objectValue)
        #expect(nimbus["fields"] == nil && nimbus["fieldsOmitted"] == .bool(true))
        #expect(nimbus["recordName"] == .string("e1") && nimbus["cursor"] == .string("x"))
    }

    @Test func theCutIsAtTheLimitNotBefore() throws {
        let fields: JSONObject = ["note": .object(["value": .string(String(repeating: "n", count: 300)), "type": .string("STRING")])]
        let payload = PushPayload(kind: .alert, notification: notification(alert: ["title": .string("t")], fields: fields),
                                  container: "c", environment: "production", cursor: "x", badge: false)
        let whole = payload.bytes(maxBytes: 1 << 20).count
        #expect(try JSONValue.parse(payload.bytes(maxBytes: whole)).objectValue?["nimbus"]?.objectValue?["fields"] != nil)
        #expect(try JSONValue.parse(payload.bytes(maxBytes: whole - 1)).objectValue?["nimbus"]?.objectValue?["fieldsOmitted"] == .bool(true))
    }

    @Test func anAlertTooLongEvenWithoutFieldsHasItsTextsCutToFit() throws {
        let title = String(repeating: "Ü", count: 1_500), body = String(repeating: "b", count: 900)
        let fields: JSONObject = ["note": .object(["value": .string("n"), "type": .string("STRING")])]
        let payload = PushPayload(kind: .alert, notification: notification(alert: ["title": .string(title), "body": .string(body)], fields: fields),
                                  container: "c", environment: "production", cursor: "x", badge: false)
        let bytes = payload.bytes(maxBytes: 4096)
        #expect(bytes.count <= 4096)
        #expect(bytes.count > 3_900, "cut to the limit, not far below it: \(bytes.count)")
        let object = try #require(try JSONValue.parse(bytes).objectValue)
        let shown = try #require(object["aps"]?.objectValue?["alert"]?.objectValue)
        let cutTitle = try #require(shown["title"]?.stringValue)
        #expect(cutTitle.hasSuffix("…") && title.hasPrefix(String(cutTitle.dropLast())))
        #expect(shown["body"]?.stringValue.map { body.hasPrefix($0.replacingOccurrences(of: "…", with: "")) } == true)
        let nimbus = try #require(object["nimbus"]?.objectValue)
        #expect(nimbus["fieldsOmitted"] == .bool(true) && nimbus["cursor"] == .string("x"))
        #expect(nimbus["alert"]?.objectValue?["title"] == .string(cutTitle), "the notification object carries the same cut text")
    }
}
