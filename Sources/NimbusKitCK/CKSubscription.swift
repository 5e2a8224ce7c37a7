import Foundation

/// A subscription. Its notifications arrive through the notification channel
/// (`CKDatabase.notifications()`) while the app runs, and as APNs pushes when the server has push
/// configured and the device registered (`CKContainer.registerForRemoteNotifications`).
public class CKSubscription: @unchecked Sendable {
    // Safe as CloudKit's CKSubscription is: configured by one owner before it is saved.
    public let subscriptionID: String
    public var notificationInfo: NotificationInfo?

    init(subscriptionID: String) { self.subscriptionID = subscriptionID }

    /// What a notification shows.
    public final class NotificationInfo: @unchecked Sendable {
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

        public init() {}

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
    }

    func nimbusSubscription() throws -> Subscription {
        Subscription(subscriptionID: subscriptionID, kind: .database, notificationInfo: notificationInfo?.nimbus ?? .init())
    }

    static func from(_ subscription: Subscription) -> CKSubscription {
        let result: CKSubscription
        switch subscription.kind {
        case .query:
            let query = CKQuerySubscription(recordType: subscription.recordType ?? "", predicate: NSPredicate(value: true),
                                            subscriptionID: subscription.subscriptionID,
                                            options: CKQuerySubscription.Options(subscription.firesOn))
            query.filters = subscription.filters
            result = query
        case .zone:
            result = CKRecordZoneSubscription(zoneID: CKRecordZone.ID(zoneName: subscription.zoneID?.zoneName ?? "_defaultZone"),
                                              subscriptionID: subscription.subscriptionID)
        case .database:
            result = CKDatabaseSubscription(subscriptionID: subscription.subscriptionID)
        }
        result.notificationInfo = NotificationInfo(subscription.notificationInfo)
        return result
    }
}

/// Notifies when records of a type that match a predicate are created, updated or deleted.
public final class CKQuerySubscription: CKSubscription, @unchecked Sendable {
    public struct Options: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let firesOnRecordCreation = Options(rawValue: 1 << 0)
        public static let firesOnRecordUpdate = Options(rawValue: 1 << 1)
        public static let firesOnRecordDeletion = Options(rawValue: 1 << 2)
        public static let firesOnce = Options(rawValue: 1 << 3)

        init(_ events: Set<Subscription.Event>) {
            var options: Options = []
            if events.contains(.create) { options.insert(.firesOnRecordCreation) }
            if events.contains(.update) { options.insert(.firesOnRecordUpdate) }
            if events.contains(.delete) { options.insert(.firesOnRecordDeletion) }
            self = options
        }
    }

    public let recordType: String
    public let predicate: NSPredicate
    public let querySubscriptionOptions: Options
    public var zoneID: CKRecordZone.ID?
    /// NimbusKit filters ANDed with the predicate's.
    public var filters: [Filter] = []

    public init(recordType: String, predicate: NSPredicate, subscriptionID: String, options: Options) {
        self.recordType = recordType
        self.predicate = predicate
        querySubscriptionOptions = options
        super.init(subscriptionID: subscriptionID)
    }

    override func nimbusSubscription() throws -> Subscription {
        var events: Set<Subscription.Event> = []
        if querySubscriptionOptions.contains(.firesOnRecordCreation) { events.insert(.create) }
        if querySubscriptionOptions.contains(.firesOnRecordUpdate) { events.insert(.update) }
        if querySubscriptionOptions.contains(.firesOnRecordDeletion) { events.insert(.delete) }
        return Subscription(subscriptionID: subscriptionID, kind: .query, recordType: recordType,
                            filters: try predicate.nimbusFilters() + filters, zoneID: zoneID?.nimbus,
                            firesOn: events.isEmpty ? Set(Subscription.Event.allCases) : events,
                            firesOnce: querySubscriptionOptions.contains(.firesOnce),
                            notificationInfo: notificationInfo?.nimbus ?? .init())
    }
}

/// Notifies of every change in a zone.
public final class CKRecordZoneSubscription: CKSubscription, @unchecked Sendable {
    public let zoneID: CKRecordZone.ID

    public init(zoneID: CKRecordZone.ID, subscriptionID: String) {
        self.zoneID = zoneID
        super.init(subscriptionID: subscriptionID)
    }

    override func nimbusSubscription() throws -> Subscription {
        Subscription(subscriptionID: subscriptionID, kind: .zone, zoneID: zoneID.nimbus, notificationInfo: notificationInfo?.nimbus ?? .init())
    }
}

/// Notifies of every change in the database.
public final class CKDatabaseSubscription: CKSubscription, @unchecked Sendable {
    public override init(subscriptionID: String) { super.init(subscriptionID: subscriptionID) }
}
