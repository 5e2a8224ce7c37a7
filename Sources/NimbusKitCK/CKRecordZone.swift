import Foundation

/// A zone (only its identity: NimbusKitCK creates zones through `CKDatabase`). It archives with
/// `NSSecureCoding`, as CloudKit's does.
public final class CKRecordZone: NSObject, NSSecureCoding, Sendable {
    public let zoneID: ID

    public init(zoneID: ID) { self.zoneID = zoneID }
    public convenience init(zoneName: String) { self.init(zoneID: ID(zoneName: zoneName)) }

    /// A zone's identity (`CKRecordZoneID`, archived with `NSSecureCoding`).
    public typealias ID = CKRecordZoneID

    public static var supportsSecureCoding: Bool { true }
    static let zoneIDKey = "zoneID"

    public func encode(with coder: NSCoder) { coder.encode(zoneID, forKey: CKRecordZone.zoneIDKey) }

    public init?(coder: NSCoder) {
        guard coder.containsValue(forKey: CKRecordZone.zoneIDKey),
              let zoneID = coder.decodeObject(of: CKRecordZoneID.self, forKey: CKRecordZone.zoneIDKey) else { return nil }
        self.zoneID = zoneID
    }

    public override func isEqual(_ object: Any?) -> Bool { (object as? CKRecordZone)?.zoneID == zoneID }
    public override var hash: Int { zoneID.hash }
    public override var description: String { "<CKRecordZone: \(zoneID.zoneName)>" }
}
