import Foundation

/// A typed record. A record fetched from the server remembers the fields it had there
/// (`serverFields`), so that saving it sends only what changed and a conflict can be resolved
/// against the last synced copy (the base).
public struct Record: Hashable, Sendable, Codable {
    public var id: RecordID
    public var recordType: String
    /// The fields as the app wants them now.
    public var fields: [String: RecordValue]
    /// The server's change tag of the copy this record was built from; `nil` for a new record.
    public internal(set) var changeTag: String?
    public internal(set) var created: Stamp?
    public internal(set) var modified: Stamp?
    /// The fields as last seen on the server (the base of a three-way merge); `nil` for a new record.
    public internal(set) var serverFields: [String: RecordValue]?

    /// Who saved a record, when, from which device.
    public struct Stamp: Hashable, Sendable, Codable {
        public var timestamp: Date
        public var userRecordName: String?
        public var deviceID: String?
    }

    /// A new record (no change tag): saving it creates it.
    public init(recordType: String, id: RecordID = .make(), fields: [String: RecordValue] = [:]) {
        self.id = id
        self.recordType = recordType
        self.fields = fields
    }

    public subscript(key: String) -> RecordValue? {
        get { fields[key] }
        set { fields[key] = newValue }
    }

    public var recordName: String { id.recordName }
    public var zoneID: ZoneID { id.zoneID }

    /// True when the server has (had) this record: it came from a fetch or a save.
    public var existsOnServer: Bool { changeTag != nil }

    /// Field names whose value differs from the server copy (all fields for a new record),
    /// including removed fields.
    public var changedKeys: [String] {
        guard let base = serverFields else { return fields.keys.sorted() }
        let keys = Set(base.keys).union(fields.keys)
        return keys.filter { !Record.sameValue(base[$0], fields[$0]) }.sorted()
    }

    /// This record as the server now has it: the given server copy's system fields and fields
    /// become both the current and the base fields.
    mutating func adoptServerCopy(_ server: Record) {
        changeTag = server.changeTag
        created = server.created
        modified = server.modified
        recordType = server.recordType
        fields = server.fields
        serverFields = server.fields
    }

    /// A record as it came from the server: base and current fields are the same.
    static func fromServer(id: RecordID, recordType: String, fields: [String: RecordValue], changeTag: String?,
                           created: Stamp?, modified: Stamp?) -> Record {
        var record = Record(recordType: recordType, id: id, fields: fields)
        record.changeTag = changeTag
        record.created = created
        record.modified = modified
        record.serverFields = fields
        return record
    }

    /// Field equality as the server sees it: assets by content, everything else by value.
    static func sameValue(_ a: RecordValue?, _ b: RecordValue?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (.asset(let x)?, .asset(let y)?): return x.sameContent(as: y)
        case (.list(let xs, let xt)?, .list(let ys, let yt)?):
            return xt == yt && xs.count == ys.count && zip(xs, ys).allSatisfy { sameValue($0, $1) }
        case (.date(let x)?, .date(let y)?):
            // TIMESTAMPs travel in whole milliseconds.
            return WireTime.milliseconds(x) == WireTime.milliseconds(y)
        case (let x?, let y?): return x == y
        default: return false
        }
    }
}

/// What a modify answered for one operation.
public enum RecordResult: Sendable, Hashable {
    case saved(Record)
    case deleted(RecordID)
}
