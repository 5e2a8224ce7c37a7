import Foundation

/// The owner name of the current user's zones.
public let CKCurrentUserDefaultName = "__defaultOwner__"

extension CKRecordZone {
    /// The zone every database has.
    public static func `default`() -> CKRecordZone { CKRecordZone(zoneID: .default) }

    /// What a zone can do; every Nimbus zone fetches changes and saves atomically.
    public struct Capabilities: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let fetchChanges = Capabilities(rawValue: 1 << 0)
        public static let atomic = Capabilities(rawValue: 1 << 1)
        public static let sharing = Capabilities(rawValue: 1 << 2)
        public static let zoneWideSharing = Capabilities(rawValue: 1 << 3)
    }

    public var capabilities: Capabilities { [.fetchChanges, .atomic] }
}

extension CKRecordZone.ID {
    /// The default zone's name.
    public static let defaultZoneName = "_defaultZone"
}
