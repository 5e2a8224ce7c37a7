/// The `reason` of an APNs error answer (Apple: "Handling notification responses from APNs", table
/// "Values for the APNs JSON reason key"). An open set: Apple adds reasons, and any string is kept.
package struct APNsReason: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    package var rawValue: String

    package init(rawValue: String) {
        self.rawValue = rawValue
    }

    package init(stringLiteral value: String) {
        self.rawValue = value
    }

    package var description: String { rawValue }

    // 400
    package static let badDeviceToken: APNsReason = "BadDeviceToken"
    package static let deviceTokenNotForTopic: APNsReason = "DeviceTokenNotForTopic"
    package static let topicDisallowed: APNsReason = "TopicDisallowed"
    package static let badCollapseID: APNsReason = "BadCollapseId"
    package static let badPriority: APNsReason = "BadPriority"
    package static let payloadEmpty: APNsReason = "PayloadEmpty"
    // 403
    package static let expiredProviderToken: APNsReason = "ExpiredProviderToken"
    package static let invalidProviderToken: APNsReason = "InvalidProviderToken"
    package static let missingProviderToken: APNsReason = "MissingProviderToken"
    // 410
    package static let unregistered: APNsReason = "Unregistered"
    // 413
    package static let payloadTooLarge: APNsReason = "PayloadTooLarge"
    // 429
    package static let tooManyProviderTokenUpdates: APNsReason = "TooManyProviderTokenUpdates"
    package static let tooManyRequests: APNsReason = "TooManyRequests"
    // 500, 503
    package static let internalServerError: APNsReason = "InternalServerError"
    package static let serviceUnavailable: APNsReason = "ServiceUnavailable"
}
