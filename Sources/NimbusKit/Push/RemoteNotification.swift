import Foundation

/// A Nimbus push as the app receives it (`userInfo` of a remote notification): the `aps` part
/// Apple shows and the `nimbus` part (docs/api.md "Push to sleeping devices": the webcourier
/// notification plus `container`, `environment` and `cursor`). Unknown keys are ignored, so a
/// newer server's additions do not break an older app.
public struct RemoteNotification: Sendable, Hashable {
    public var notificationID: String
    public var subscriptionID: String
    public var kind: Subscription.Kind
    /// Why it fired; nil only when a zone or database notification carries none.
    public var reason: NimbusNotification.Reason?
    public var recordID: RecordID?
    public var recordType: String?
    /// The subscription's `desiredKeys` that are plain values. Empty when `fieldsOmitted`.
    public var fields: [String: RecordValue]
    /// `ENCRYPTED_BYTES` fields as their ciphertext, for a key store to open.
    public var encryptedFields: [String: Data]
    /// The fields did not fit Apple's payload limit: fetch the record (`NotificationServiceHelper` does).
    public var fieldsOmitted: Bool
    public var container: String
    public var environment: String
    /// The notification channel's position just past this notification (the `since` of a poll).
    public var cursor: String
    /// What `aps` shows: title, body, localization key, sound.
    public var alert: NimbusNotification.Alert?
    public var contentAvailable: Bool
    public var zoneID: ZoneID { recordID?.zoneID ?? parsedZone }
    var parsedZone: ZoneID

    /// Reads a push's `userInfo`. A dictionary without a `nimbus` member, or one missing what
    /// every Nimbus notification has, throws `invalidArguments` naming what is wrong.
    public init(userInfo: [AnyHashable: Any]) throws {
        // Apple hands `userInfo` over as Foundation objects (`NSDictionary`, `NSNumber`): read once
        // into the wire's typed JSON, members JSON cannot hold left out.
        var top = JSONObject()
        for (key, value) in userInfo {
            if let key = key.base as? String, let value = JSON.value(foundation: value) { top[key] = value }
        }
        guard let nimbus = JSON.object(top["nimbus"]) else {
            throw Self.malformed("it has no \"nimbus\" object (not a Nimbus push)")
        }
        func required(_ key: String) throws -> String {
            guard let value = JSON.string(nimbus[key]), !value.isEmpty else { throw Self.malformed("nimbus.\(key) is missing or not a string") }
            return value
        }
        notificationID = try required("notificationID")
        subscriptionID = try required("subscriptionID")
        let type = try required("notificationType")
        guard let kind = Subscription.Kind(rawValue: type) else { throw Self.malformed("nimbus.notificationType \"\(type)\" is unknown") }
        self.kind = kind
        if let reasonText = JSON.string(nimbus["reason"]) {
            guard let reason = NimbusNotification.Reason(rawValue: reasonText) else {
                throw Self.malformed("nimbus.reason \"\(reasonText)\" is unknown")
            }
            self.reason = reason
        } else if kind == .query {
            throw Self.malformed("nimbus.reason is missing from a query notification")
        } else {
            reason = nil
        }
        container = try required("container")
        environment = try required("environment")
        cursor = try required("cursor")
        parsedZone = JSON.string(JSON.object(nimbus["zoneID"])?["zoneName"]).map(ZoneID.init) ?? .default
        let recordZone = parsedZone
        recordID = JSON.string(nimbus["recordName"]).map { RecordID(recordName: $0, zoneID: recordZone) }
        recordType = JSON.string(nimbus["recordType"])
        fieldsOmitted = JSON.bool(nimbus["fieldsOmitted"]) ?? false
        let wireFields = JSON.object(nimbus["fields"]) ?? [:]
        let zone = parsedZone
        (fields, encryptedFields) = Self.readFields(wireFields, zone: zone)
        let aps = JSON.object(top["aps"]) ?? [:]
        contentAvailable = (JSON.int64(aps["content-available"]) ?? 0) == 1
        alert = Self.alert(aps)
    }

    /// The notification as the channel delivers it, positioned on `channelURL`.
    public func notification(channelURL: URL) -> NimbusNotification {
        NimbusNotification(notificationID: notificationID, subscriptionID: subscriptionID, kind: kind, reason: reason ?? .recordUpdated,
                           recordID: recordID, recordType: recordType, alert: alert, contentAvailable: contentAvailable,
                           fields: fields, cursor: NotificationCursor(channelURL: channelURL, value: cursor))
    }

    /// Plain fields become values; `ENCRYPTED_BYTES` stays ciphertext; a field of a type this
    /// client does not know is left out rather than failing the whole push.
    static func readFields(_ wire: JSONObject, zone: ZoneID) -> ([String: RecordValue], [String: Data]) {
        var plain: [String: RecordValue] = [:]
        var encrypted: [String: Data] = [:]
        for (name, field) in wire {
            guard let object = JSON.object(field) else { continue }
            if JSON.string(object["type"]) == "ENCRYPTED_BYTES" {
                if let text = JSON.string(object["value"]), let data = Data(base64Encoded: text) { encrypted[name] = data }
            } else if let value = try? RecordValue.fromWire(object, zoneID: zone) {
                plain[name] = value
            }
        }
        return (plain, encrypted)
    }

    /// `aps.alert` is a string (the body) or an object (`title`, `body`, `loc-key`).
    static func alert(_ aps: JSONObject) -> NimbusNotification.Alert? {
        let sound = JSON.string(aps["sound"])
        if let body = JSON.string(aps["alert"]) {
            return NimbusNotification.Alert(title: nil, body: body, localizationKey: nil, soundName: sound)
        }
        guard let alert = JSON.object(aps["alert"]) else {
            return sound.map { NimbusNotification.Alert(title: nil, body: nil, localizationKey: nil, soundName: $0) }
        }
        return NimbusNotification.Alert(title: JSON.string(alert["title"]), body: JSON.string(alert["body"]),
                                        localizationKey: JSON.string(alert["loc-key"]), soundName: sound)
    }

    static func malformed(_ what: String) -> NimbusError {
        NimbusError(.invalidArguments, reason: "The remote notification cannot be read: \(what).")
    }
}
