import Foundation

/// A zone of a database, by name. `_defaultZone` always exists.
public struct ZoneID: Hashable, Sendable, Codable, CustomStringConvertible {
    public var zoneName: String

    public init(_ zoneName: String) { self.zoneName = zoneName }

    /// The zone every database has.
    public static let `default` = ZoneID("_defaultZone")

    public var description: String { zoneName }
}

/// A record's identity: its name inside a zone. Names are chosen by the client (see `RecordID.make`)
/// so that a retried create can never make a second record.
public struct RecordID: Hashable, Sendable, Codable, CustomStringConvertible {
    public var recordName: String
    public var zoneID: ZoneID

    public init(recordName: String, zoneID: ZoneID = .default) {
        self.recordName = recordName
        self.zoneID = zoneID
    }

    /// A fresh client-generated name (a UUID), so that creates are idempotent when retried.
    public static func make(in zoneID: ZoneID = .default) -> RecordID {
        RecordID(recordName: UUID().uuidString, zoneID: zoneID)
    }

    public var description: String { "\(zoneID.zoneName)/\(recordName)" }
}
