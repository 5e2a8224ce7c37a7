import Foundation

/// Lets `CKNotification(fromRemoteNotificationDictionary:)` return a `CKQueryNotification`,
/// `CKRecordZoneNotification` or `CKDatabaseNotification`, as CloudKit's factory initializer
/// does (a protocol extension's initializer may assign `self`; a class's may not).
public protocol CKNotificationFactory {}

extension CKNotificationFactory where Self: CKNotification {
    /// Reads a Nimbus push (`{"aps": …, "nimbus": …}`) into the notification class its type says;
    /// nil for a dictionary that is not a Nimbus push, or when called on a subclass that does not
    /// match the push's type. `RemoteNotification(userInfo:)` says what is wrong with a bad one.
    public init?(fromRemoteNotificationDictionary notificationDictionary: [AnyHashable: Any]) {
        guard let push = try? RemoteNotification(userInfo: notificationDictionary),
              let made = CKNotification.make(push) as? Self else { return nil }
        self = made
    }
}

/// A push announcing a change (CloudKit's names and properties).
public class CKNotification: CKNotificationFactory, @unchecked Sendable {
    // Safe: immutable after init.
    public enum NotificationType: Int, Sendable { case query = 1, recordZone = 2, readNotification = 3, database = 4 }

    /// A notification's identity.
    public final class ID: NSObject, Sendable {
        public let value: String
        init(_ value: String) { self.value = value }
        public override func isEqual(_ object: Any?) -> Bool { (object as? ID)?.value == value }
        public override var hash: Int { value.hashValue }
        public override var description: String { value }
    }

    public let notificationType: NotificationType
    public let notificationID: ID?
    public let containerIdentifier: String?
    public let subscriptionID: String?
    /// Nimbus pushes are never pruned: when the fields do not fit, `fieldsOmitted` says so instead.
    public let isPruned = false
    public let title: String?
    public let alertBody: String?
    public let alertLocalizationKey: String?
    public let soundName: String?
    /// The push as NimbusKit reads it (cursor, `fieldsOmitted`, encrypted fields).
    public let nimbus: RemoteNotification

    init(_ push: RemoteNotification, type: NotificationType) {
        nimbus = push
        notificationType = type
        notificationID = ID(push.notificationID)
        containerIdentifier = push.container
        subscriptionID = push.subscriptionID
        title = push.alert?.title
        alertBody = push.alert?.body
        alertLocalizationKey = push.alert?.localizationKey
        soundName = push.alert?.soundName
    }

    static func make(_ push: RemoteNotification) -> CKNotification {
        switch push.kind {
        case .query: return CKQueryNotification(push)
        case .zone: return CKRecordZoneNotification(push)
        case .database: return CKDatabaseNotification(push)
        }
    }
}

/// A query subscription's notification: which record changed and how.
public final class CKQueryNotification: CKNotification, @unchecked Sendable {
    // Safe: immutable after init.
    public enum Reason: Int, Sendable { case recordCreated = 1, recordUpdated = 2, recordDeleted = 3 }

    public let queryNotificationReason: Reason
    /// The subscription's `desiredKeys` as `CKRecordValue`s; nil when the push carries none
    /// (`nimbus.fieldsOmitted`: fetch the record). Encrypted fields are not among them.
    public let recordFields: [String: Any]?
    public let recordID: CKRecord.ID?
    public let databaseScope: CKDatabase.Scope = .private

    init(_ push: RemoteNotification) {
        switch push.reason {
        case .recordCreated: queryNotificationReason = .recordCreated
        case .recordDeleted: queryNotificationReason = .recordDeleted
        case .recordUpdated, nil: queryNotificationReason = .recordUpdated
        }
        var fields: [String: Any] = [:]
        for (key, value) in push.fields { if let ck = CKRecord.ckValue(value) { fields[key] = ck } }
        recordFields = push.fieldsOmitted || fields.isEmpty ? nil : fields
        recordID = push.recordID.map { CKRecord.ID(recordName: $0.recordName, zoneID: CKRecordZone.ID($0.zoneID)) }
        super.init(push, type: .query)
    }
}

/// A zone subscription's notification: something in the zone changed.
public final class CKRecordZoneNotification: CKNotification, @unchecked Sendable {
    // Safe: immutable after init.
    public let recordZoneID: CKRecordZone.ID?
    public let databaseScope: CKDatabase.Scope = .private

    init(_ push: RemoteNotification) {
        recordZoneID = CKRecordZone.ID(push.zoneID)
        super.init(push, type: .recordZone)
    }
}

/// A database subscription's notification: something in the database changed.
public final class CKDatabaseNotification: CKNotification, @unchecked Sendable {
    // Safe: immutable after init.
    public let databaseScope: CKDatabase.Scope = .private

    init(_ push: RemoteNotification) { super.init(push, type: .database) }
}
