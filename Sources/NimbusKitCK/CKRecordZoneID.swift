import Foundation

/// A zone's identity, CloudKit's `CKRecordZone.ID`. A top-level class because Linux's
/// `NSKeyedArchiver` cannot name a nested one; apps write `CKRecordZone.ID`.
public final class CKRecordZoneID: NSObject, NSSecureCoding, Sendable {
    public let zoneName: String
    public let ownerName: String

    public init(zoneName: String = "_defaultZone", ownerName: String = "__defaultOwner__") {
        self.zoneName = zoneName
        self.ownerName = ownerName
    }

    /// The zone every database has.
    public static let `default` = CKRecordZoneID()

    var nimbus: ZoneID { ZoneID(zoneName) }
    convenience init(_ zone: ZoneID) { self.init(zoneName: zone.zoneName) }

    public static var supportsSecureCoding: Bool { true }
    static let zoneNameKey = "zoneName", ownerNameKey = "ownerName"

    public func encode(with coder: NSCoder) {
        coder.encode(NSString(string: zoneName), forKey: CKRecordZoneID.zoneNameKey)
        coder.encode(NSString(string: ownerName), forKey: CKRecordZoneID.ownerNameKey)
    }

    public convenience init?(coder: NSCoder) {
        guard let zoneName = coder.decodeString(forKey: CKRecordZoneID.zoneNameKey) else { return nil }
        self.init(zoneName: zoneName, ownerName: coder.decodeString(forKey: CKRecordZoneID.ownerNameKey) ?? CKCurrentUserDefaultName)
    }

    public override func isEqual(_ object: Any?) -> Bool { (object as? CKRecordZoneID)?.zoneName == zoneName }
    public override var hash: Int { zoneName.hashValue }
    public override var description: String { "<CKRecordZoneID: \(zoneName)>" }
}

extension NSCoder {
    /// A string value, or nil when the key is absent (asked first: a missing key is a decoding
    /// failure in Linux's `NSKeyedUnarchiver`).
    func decodeString(forKey key: String) -> String? {
        guard containsValue(forKey: key), let value = decodeObject(of: NSString.self, forKey: key) else { return nil }
        return String(describing: value)
    }

    /// JSON-encoded `Codable` state under one key (NimbusKit's values are `Codable`, not `NSCoding`).
    func encodeJSON<T: Encodable>(_ value: T, forKey key: String) {
        guard let data = try? JSONEncoder().encode(value) else { return }
        encode(NSData(data: data), forKey: key)
    }

    func decodeJSON<T: Decodable>(_ type: T.Type, forKey key: String) -> T? {
        guard containsValue(forKey: key), let data = decodeObject(of: NSData.self, forKey: key) else { return nil }
        return try? JSONDecoder().decode(type, from: Data(referencing: data))
    }
}
