/// The member names of a record and of its fields on the wire (docs/api.md § Records), spelled
/// once for the server's writer and modify decoder and for NimbusKit's writer and readers.
///
///     {"recordName", "recordType", "recordChangeTag", "fields": {NAME: {"value", "type"}},
///      "created"/"modified": {"timestamp", "userRecordName", "deviceID"},
///      "deleted", "zoneID": {"zoneName"}}
///     REFERENCE {"recordName", "action", "zoneID": {"zoneName"}}
///     ASSETID   {"fileChecksum", "size", "receipt", "downloadURL"}
///
/// `rawValue` is the name as a `String` (tree lookups); `spelling` the same as a constant, for
/// scanners that match request bytes against a few names without making strings. The writers
/// (`RecordWire`, `FieldWire`) write them inside fused constant pieces, checked against these
/// in RecordWireTests.
package enum WireKey: String, CaseIterable, Sendable {
    case recordName, recordType, recordChangeTag, fields, zoneID, zoneName, created, modified, deleted
    case timestamp, userRecordName, deviceID
    case value, type
    case action
    case fileChecksum, size, receipt, downloadURL

    /// `rawValue` as a constant.
    package var spelling: StaticString {
        switch self {
        case .recordName: "recordName"
        case .recordType: "recordType"
        case .recordChangeTag: "recordChangeTag"
        case .fields: "fields"
        case .zoneID: "zoneID"
        case .zoneName: "zoneName"
        case .created: "created"
        case .modified: "modified"
        case .deleted: "deleted"
        case .timestamp: "timestamp"
        case .userRecordName: "userRecordName"
        case .deviceID: "deviceID"
        case .value: "value"
        case .type: "type"
        case .action: "action"
        case .fileChecksum: "fileChecksum"
        case .size: "size"
        case .receipt: "receipt"
        case .downloadURL: "downloadURL"
        }
    }

    /// The spellings of `keys`, in order (a scanner's list of names it knows).
    package static func spellings(_ keys: [WireKey]) -> [StaticString] { keys.map(\.spelling) }
}

/// A `REFERENCE`'s `action`: what deleting the target does to the referencing record.
package enum ReferenceAction: String, Sendable, Hashable, CaseIterable {
    case none = "NONE"
    case deleteSelf = "DELETE_SELF"

    /// `rawValue` as a JSON string constant, for writers.
    package var quotedName: StaticString {
        switch self {
        case .none: #""NONE""#
        case .deleteSelf: #""DELETE_SELF""#
        }
    }
}

extension JSONObject {
    /// The member named `key`.
    package subscript(key: WireKey) -> JSONValue? {
        get { self[key.rawValue] }
        set { self[key.rawValue] = newValue }
    }
}

extension JSONValue {
    /// An object's member named `key`; nil for any other value.
    package subscript(key: WireKey) -> JSONValue? { self[key.rawValue] }
}
