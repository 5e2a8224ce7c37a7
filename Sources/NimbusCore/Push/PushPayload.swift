import NimbusSupport

/// The JSON body of one push (docs/api.md "Push to sleeping devices", Payload):
/// `{"aps": {...}, "nimbus": {...}}`, where `nimbus` is the webcourier notification object plus
/// `container`, `environment` and `cursor`. Pure: the sender calls it with a claimed push.
package struct PushPayload: Sendable, Hashable {
    package var kind: PushKind
    /// The notification object exactly as a long-poll returns it (`alert`, `contentAvailable`, `fields`?).
    package var notification: JSONValue
    package var container: String
    package var environment: String
    package var cursor: String
    /// The subscription's `shouldBadge`: `"badge": 1` on an alert.
    package var badge: Bool

    package init(kind: PushKind, notification: JSONValue, container: String, environment: String, cursor: String, badge: Bool) {
        self.kind = kind
        self.notification = notification
        self.container = container
        self.environment = environment
        self.cursor = cursor
        self.badge = badge
    }

    /// The payload's bytes, at most `maxBytes`: a payload over it loses its `fields` whole and says
    /// `"fieldsOmitted": true` (the app fetches); one still over it (a title of kilobytes) has its
    /// alert's title and body cut, the longer first, each ending in "…", until it fits.
    package func bytes(maxBytes: Int) -> [UInt8] {
        var payload = self
        var omitting = false
        var bytes = payload.serialized(omittingFields: omitting)
        if bytes.count > maxBytes, notification.objectValue?["fields"] != nil {
            omitting = true
            bytes = payload.serialized(omittingFields: omitting)
        }
        // The texts stand twice (in `aps` and in `nimbus`): each round cuts half the excess from one.
        while bytes.count > maxBytes, let shortened = payload.cuttingAlertText(by: (bytes.count - maxBytes + 1) / 2) {
            payload = shortened
            bytes = payload.serialized(omittingFields: omitting)
        }
        return bytes
    }

    private func serialized(omittingFields: Bool) -> [UInt8] {
        JSONValue.object(["aps": .object(aps), "nimbus": .object(nimbus(omittingFields: omittingFields))]).serialized()
    }

    /// This payload with the longer of the alert's title and body shorter by at least `excess`
    /// UTF-8 bytes (whole characters, then "…"); nil when neither has anything left to cut.
    private func cuttingAlertText(by excess: Int) -> PushPayload? {
        guard var object = notification.objectValue, var alert = object["alert"]?.objectValue else { return nil }
        let texts = ["title", "body"].compactMap { key in alert[key]?.stringValue.map { (key, $0) } }
        guard let (key, text) = texts.max(by: { $0.1.utf8.count < $1.1.utf8.count }), text.utf8.count > 1 else { return nil }
        var kept = Substring(text.hasSuffix("…") ? String(text.dropLast()) : text)
        var removed = 0
        while !kept.isEmpty, removed < excess {
            removed += kept.last.map { String($0).utf8.count } ?? 0
            kept = kept.dropLast()
        }
        alert[key] = .string(kept + "…")
        object["alert"] = .object(alert)
        var payload = self
        payload.notification = .object(object)
        return payload
    }

    /// `aps`: a background push holds only `content-available`; an alert its `alert` (title, body,
    /// loc-key), `sound`, `badge` when asked for, `mutable-content` (for the service extension) and
    /// `content-available` only when the subscription also asked for it.
    var aps: JSONObject {
        let object = notification.objectValue ?? JSONObject()
        guard kind == .alert else { return ["content-available": .integer(1)] }
        var aps = JSONObject()
        let shown = object["alert"]?.objectValue ?? JSONObject()
        var alert = JSONObject()
        if let title = shown["title"] { alert["title"] = title }
        if let body = shown["body"] { alert["body"] = body }
        if let key = shown["localizationKey"] { alert["loc-key"] = key }
        if !alert.isEmpty { aps["alert"] = .object(alert) }
        if let sound = shown["soundName"] { aps["sound"] = sound }
        if badge { aps["badge"] = .integer(1) }
        aps["mutable-content"] = .integer(1)
        if object["contentAvailable"]?.boolValue == true { aps["content-available"] = .integer(1) }
        return aps
    }

    /// `nimbus`: the notification object, `container`, `environment`, `cursor`; without `fields`
    /// and with `"fieldsOmitted": true` when `omittingFields`.
    func nimbus(omittingFields: Bool) -> JSONObject {
        var object = notification.objectValue ?? JSONObject()
        if omittingFields {
            object["fields"] = nil
            object["fieldsOmitted"] = .bool(true)
        }
        object["container"] = .string(container)
        object["environment"] = .string(environment)
        object["cursor"] = .string(cursor)
        return object
    }
}
