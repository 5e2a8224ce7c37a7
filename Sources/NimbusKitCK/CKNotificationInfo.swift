import Foundation

/// What a subscription's notification shows, CloudKit's `CKSubscription.NotificationInfo`. It
/// archives with `NSSecureCoding`; top-level because Linux's `NSKeyedArchiver` cannot name a nested class.
public final class CKNotificationInfo: NSObject, NSSecureCoding, @unchecked Sendable {
    // Safe: configured by one owner before the subscription is saved.
    public var title: String?
    public var alertBody: String?
    public var alertLocalizationKey: String?
    public var soundName: String?
    public var shouldBadge = false
    public var shouldSendContentAvailable = false
    public var desiredKeys: [String]?
    /// The app's notification category. Nimbus pushes carry no category: it stays on this
    /// object (an app sets it on the notification it shows).
    public var category: String?

    public override init() { super.init() }

    var nimbus: Subscription.NotificationInfo {
        Subscription.NotificationInfo(title: title, alertBody: alertBody, alertLocalizationKey: alertLocalizationKey,
                                      soundName: soundName, shouldBadge: shouldBadge,
                                      shouldSendContentAvailable: shouldSendContentAvailable, desiredKeys: desiredKeys)
    }

    convenience init(_ info: Subscription.NotificationInfo) {
        self.init()
        title = info.title
        alertBody = info.alertBody
        alertLocalizationKey = info.alertLocalizationKey
        soundName = info.soundName
        shouldBadge = info.shouldBadge
        shouldSendContentAvailable = info.shouldSendContentAvailable
        desiredKeys = info.desiredKeys
    }

    // MARK: - NSSecureCoding

    public static var supportsSecureCoding: Bool { true }
    static let fieldsKey = "NimbusNotificationInfo"

    private struct Fields: Codable {
        var title, alertBody, alertLocalizationKey, soundName, category: String?
        var shouldBadge, shouldSendContentAvailable: Bool
        var desiredKeys: [String]?
    }

    public func encode(with coder: NSCoder) {
        coder.encodeJSON(Fields(title: title, alertBody: alertBody, alertLocalizationKey: alertLocalizationKey, soundName: soundName,
                                category: category, shouldBadge: shouldBadge, shouldSendContentAvailable: shouldSendContentAvailable,
                                desiredKeys: desiredKeys), forKey: CKNotificationInfo.fieldsKey)
    }

    public init?(coder: NSCoder) {
        guard let fields = coder.decodeJSON(Fields.self, forKey: CKNotificationInfo.fieldsKey) else { return nil }
        title = fields.title
        alertBody = fields.alertBody
        alertLocalizationKey = fields.alertLocalizationKey
        soundName = fields.soundName
        category = fields.category
        shouldBadge = fields.shouldBadge
        shouldSendContentAvailable = fields.shouldSendContentAvailable
        desiredKeys = fields.desiredKeys
    }
}
