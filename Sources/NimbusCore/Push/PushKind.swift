import NimbusSupport

/// Which push a subscription's notification becomes (docs/api.md "What is pushed"): an alert when
/// `notificationInfo` has something to show, a background push when it asks only for
/// `shouldSendContentAvailable`, none otherwise.
package enum PushKind: String, Sendable, Hashable, CaseIterable {
    /// `apns-push-type: alert`, priority 10.
    case alert
    /// `apns-push-type: background`, priority 5, collapsed per zone, at most
    /// `maxBackgroundPushesPerHour` to one device.
    case background

    /// The members of `notificationInfo` that make an alert: any of these strings, or
    /// `shouldBadge` true.
    static let alertMembers = ["title", "alertBody", "alertLocalizationKey", "soundName"]

    /// The push a notification of a subscription with this `notificationInfo` gives; nil: not pushed.
    /// A member that is present but null or false counts as absent (`"shouldBadge": false` asks
    /// for no badge; it is not something to show).
    package static func of(notificationInfo info: JSONObject) -> PushKind? {
        let showsSomething = alertMembers.contains { key in
            if case .string? = info[key] { return true } else { return false }
        }
        if showsSomething || info["shouldBadge"]?.boolValue == true { return .alert }
        if info["shouldSendContentAvailable"]?.boolValue == true { return .background }
        return nil
    }
}
