import Foundation

/// A subscription. Its notifications arrive through the notification channel
/// (`CKDatabase.notifications()`) while the app runs, and as APNs pushes when the server has push
/// configured and the device registered (`CKContainer.registerForRemoteNotifications`).
/// Archives with `NSSecureCoding` (as CloudKit's does), its subclasses included.
public class CKSubscription: NSObject, NSSecureCoding, @unchecked Sendable {
    // Safe as CloudKit's CKSubscription is: configured by one owner before it is saved.
    public let subscriptionID: String
    public var notificationInfo: NotificationInfo?

    init(subscriptionID: String) { self.subscriptionID = subscriptionID }

    public class var supportsSecureCoding: Bool { true }
    static let idKey = "subscriptionID", infoKey = "notificationInfo"

    public func encode(with coder: NSCoder) {
        coder.encode(NSString(string: subscriptionID), forKey: CKSubscription.idKey)
        if let notificationInfo { coder.encode(notificationInfo, forKey: CKSubscription.infoKey) }
    }

    public required init?(coder: NSCoder) {
        guard let id = coder.decodeString(forKey: CKSubscription.idKey) else { return nil }
        subscriptionID = id
        notificationInfo = coder.containsValue(forKey: CKSubscription.infoKey)
            ? coder.decodeObject(of: NotificationInfo.self, forKey: CKSubscription.infoKey) : nil
    }

    public override var description: String { "<\(type(of: self)) \(subscriptionID)>" }

    /// What a notification shows (`CKNotificationInfo`, archived with `NSSecureCoding`).
    public typealias NotificationInfo = CKNotificationInfo

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

    static let recordTypeKey = "recordType", predicateKey = "predicate", optionsKey = "querySubscriptionOptions"
    static let zoneIDKey = "zoneID", filtersKey = "NimbusFilters"

    public override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(NSString(string: recordType), forKey: CKQuerySubscription.recordTypeKey)
        predicate.encode(to: coder, forKey: CKQuerySubscription.predicateKey)
        coder.encode(NSNumber(value: querySubscriptionOptions.rawValue), forKey: CKQuerySubscription.optionsKey)
        if let zoneID { coder.encode(zoneID, forKey: CKQuerySubscription.zoneIDKey) }
        if !filters.isEmpty { coder.encodeJSON(filters.map(FilterArchive.init), forKey: CKQuerySubscription.filtersKey) }
    }

    public required init?(coder: NSCoder) {
        guard let recordType = coder.decodeString(forKey: CKQuerySubscription.recordTypeKey),
              let predicate = NSPredicate.decode(from: coder, forKey: CKQuerySubscription.predicateKey),
              coder.containsValue(forKey: CKQuerySubscription.optionsKey),
              let options = coder.decodeObject(of: NSNumber.self, forKey: CKQuerySubscription.optionsKey) else { return nil }
        self.recordType = recordType
        self.predicate = predicate
        querySubscriptionOptions = Options(rawValue: options.uintValue)
        zoneID = coder.containsValue(forKey: CKQuerySubscription.zoneIDKey)
            ? coder.decodeObject(of: CKRecordZoneID.self, forKey: CKQuerySubscription.zoneIDKey) : nil
        filters = coder.decodeJSON([FilterArchive].self, forKey: CKQuerySubscription.filtersKey)?.compactMap(\.filter) ?? []
        super.init(coder: coder)
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

    public override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(zoneID, forKey: CKQuerySubscription.zoneIDKey)
    }

    public required init?(coder: NSCoder) {
        guard coder.containsValue(forKey: CKQuerySubscription.zoneIDKey),
              let zoneID = coder.decodeObject(of: CKRecordZoneID.self, forKey: CKQuerySubscription.zoneIDKey) else { return nil }
        self.zoneID = zoneID
        super.init(coder: coder)
    }

    override func nimbusSubscription() throws -> Subscription {
        Subscription(subscriptionID: subscriptionID, kind: .zone, zoneID: zoneID.nimbus, notificationInfo: notificationInfo?.nimbus ?? .init())
    }
}

/// Notifies of every change in the database.
public final class CKDatabaseSubscription: CKSubscription, @unchecked Sendable {
    public override init(subscriptionID: String) { super.init(subscriptionID: subscriptionID) }
    public required init?(coder: NSCoder) { super.init(coder: coder) }
}
