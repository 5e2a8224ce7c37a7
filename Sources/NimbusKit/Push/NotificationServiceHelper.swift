import Foundation

/// Opens the encrypted fields of a push (the seam for the account key store). Return nil when
/// the key is missing or the ciphertext does not open: the banner then shows the generic text.
public protocol PushFieldOpener: Sendable {
    func open(field: String, ciphertext: Data, of notification: RemoteNotification) throws -> RecordValue?
}

/// A banner's text.
public struct BannerText: Sendable, Hashable {
    public var title: String
    public var body: String
    public init(title: String, body: String) {
        self.title = title
        self.body = body
    }
}

/// The work of a notification service extension (`UNNotificationServiceExtension`, which the
/// system runs for alert pushes because Nimbus sets `mutable-content`): from a push, the
/// banner's title and body. It fetches the record when the server left its fields out
/// (`fieldsOmitted`), opens encrypted fields with `opener`, lets `compose` turn the fields into
/// text, and falls back to the push's own alert, then to `generic`, whenever that fails — the
/// system shows whatever the extension returns before its time runs out, so this never throws.
public struct NotificationServiceHelper: Sendable {
    /// What `compose` is given: the push, and its fields (fetched, opened) as far as they could be read.
    public typealias Compose = @Sendable (RemoteNotification, [String: RecordValue]) -> BannerText?

    public var database: Database?
    public var opener: (any PushFieldOpener)?
    public var generic: BannerText
    public var compose: Compose

    /// `database` is used only to fetch omitted fields (nil: never fetch); `compose` returns nil
    /// when the fields are not enough for a text.
    public init(database: Database?, opener: (any PushFieldOpener)? = nil,
                generic: BannerText = BannerText(title: "New activity", body: "Open the app to see it."),
                compose: @escaping Compose) {
        self.database = database
        self.opener = opener
        self.generic = generic
        self.compose = compose
    }

    /// The banner for a push's `userInfo`.
    public func banner(for userInfo: [AnyHashable: Any]) async -> BannerText {
        guard let push = try? RemoteNotification(userInfo: userInfo) else { return generic }
        let fields = await readableFields(push)
        if let text = compose(push, fields) { return text }
        if let alert = push.alert, let body = alert.body ?? alert.title {
            return BannerText(title: alert.title ?? generic.title, body: alert.body ?? generic.body)
        }
        return generic
    }

    /// The push's fields with encrypted ones opened; when they were omitted, the record's current
    /// fields (`records/lookup` by the record name the push carries).
    public func readableFields(_ push: RemoteNotification) async -> [String: RecordValue] {
        var fields = push.fields
        var encrypted = push.encryptedFields
        if push.fieldsOmitted, let database, let id = push.recordID, push.reason != .recordDeleted,
           let record = try? await database.record(for: id) {
            fields = record.fields
            encrypted = [:]  // the fetched record carries its fields as the client reads them
        }
        for (name, ciphertext) in encrypted {
            if let value = try? opener?.open(field: name, ciphertext: ciphertext, of: push) { fields[name] = value }
        }
        return fields
    }
}

#if canImport(UserNotifications)
import UserNotifications

@available(macOS 10.14, iOS 12.0, *)
extension NotificationServiceHelper {
    /// For `didReceive(_:withContentHandler:)`: the request's content with the banner's text.
    public func content(for request: UNNotificationRequest) async -> UNNotificationContent {
        let banner = await banner(for: request.content.userInfo)
        guard let content = request.content.mutableCopy() as? UNMutableNotificationContent else { return request.content }
        content.title = banner.title
        content.body = banner.body
        return content
    }
}
#endif
