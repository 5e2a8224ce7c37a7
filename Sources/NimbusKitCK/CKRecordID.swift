import Foundation

/// A record's identity, CloudKit's `CKRecord.ID`. A top-level class because Linux's
/// `NSKeyedArchiver` cannot name a nested one; apps write `CKRecord.ID`.
public final class CKRecordID: NSObject, NSSecureCoding, Sendable {
    public let recordName: String
    public let zoneID: CKRecordZone.ID

    public init(recordName: String, zoneID: CKRecordZone.ID = .default) {
        self.recordName = recordName
        self.zoneID = zoneID
    }

    var nimbus: RecordID { RecordID(recordName: recordName, zoneID: zoneID.nimbus) }
    convenience init(_ id: RecordID) { self.init(recordName: id.recordName, zoneID: CKRecordZone.ID(id.zoneID)) }

    public static var supportsSecureCoding: Bool { true }
    static let recordNameKey = "recordName", zoneIDKey = "zoneID"

    public func encode(with coder: NSCoder) {
        coder.encode(NSString(string: recordName), forKey: CKRecordID.recordNameKey)
        coder.encode(zoneID, forKey: CKRecordID.zoneIDKey)
    }

    public convenience init?(coder: NSCoder) {
        guard let recordName = coder.decodeString(forKey: CKRecordID.recordNameKey), coder.containsValue(forKey: CKRecordID.zoneIDKey),
              let zoneID = coder.decodeObject(of: CKRecordZoneID.self, forKey: CKRecordID.zoneIDKey) else { return nil }
        self.init(recordName: recordName, zoneID: zoneID)
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CKRecordID else { return false }
        return other.recordName == recordName && other.zoneID.zoneName == zoneID.zoneName
    }
    public override var hash: Int { recordName.hashValue ^ zoneID.zoneName.hashValue }
    public override var description: String { "<CKRecordID: \(recordName); zone \(zoneID.zoneName)>" }
}
