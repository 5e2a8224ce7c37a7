import Foundation

/// A zone (only its identity: NimbusKitCK creates zones through `CKDatabase`).
public final class CKRecordZone: @unchecked Sendable {
    // Safe: immutable after init.
    public let zoneID: ID

    public init(zoneID: ID) { self.zoneID = zoneID }
    public convenience init(zoneName: String) { self.init(zoneID: ID(zoneName: zoneName)) }

    /// A zone's identity.
    public final class ID: NSObject, @unchecked Sendable {
        // Safe: immutable after init.
        public let zoneName: String
        public let ownerName: String

        public init(zoneName: String = "_defaultZone", ownerName: String = "__defaultOwner__") {
            self.zoneName = zoneName
            self.ownerName = ownerName
        }

        /// The zone every database has.
        public static let `default` = ID()

        var nimbus: ZoneID { ZoneID(zoneName) }
        convenience init(_ zone: ZoneID) { self.init(zoneName: zone.zoneName) }

        public override func isEqual(_ object: Any?) -> Bool { (object as? ID)?.zoneName == zoneName }
        public override var hash: Int { zoneName.hashValue }
        public override var description: String { "<CKRecordZoneID: \(zoneName)>" }
    }
}
