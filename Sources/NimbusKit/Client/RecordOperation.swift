import Foundation
import NimbusWire

/// One operation of `records/modify`, as docs/api.md's operation types.
public struct RecordOperation: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, Codable {
        case create, update, forceUpdate, replace, forceReplace, delete, forceDelete
    }

    public var kind: Kind
    public var recordID: RecordID
    /// The record to save (nil for deletes).
    public var record: Record?
    /// For deletes: the change tag the record must still have (`delete`).
    public var changeTag: String?

    /// Creates a new record, or updates the changed fields of one that came from the server
    /// (its change tag is checked: a stale one is `serverRecordChanged`).
    public static func save(_ record: Record) -> RecordOperation {
        RecordOperation(kind: record.existsOnServer ? .update : .create, recordID: record.id, record: record)
    }

    public static func create(_ record: Record) -> RecordOperation { RecordOperation(kind: .create, recordID: record.id, record: record) }
    public static func update(_ record: Record) -> RecordOperation { RecordOperation(kind: .update, recordID: record.id, record: record) }
    public static func forceUpdate(_ record: Record) -> RecordOperation {
        RecordOperation(kind: .forceUpdate, recordID: record.id, record: record)
    }
    public static func replace(_ record: Record) -> RecordOperation { RecordOperation(kind: .replace, recordID: record.id, record: record) }
    public static func forceReplace(_ record: Record) -> RecordOperation {
        RecordOperation(kind: .forceReplace, recordID: record.id, record: record)
    }
    /// Deletes a record; with a change tag only if the record still has it.
    public static func delete(_ id: RecordID, changeTag: String? = nil) -> RecordOperation {
        RecordOperation(kind: changeTag == nil ? .forceDelete : .delete, recordID: id, changeTag: changeTag)
    }

    /// The wire operation; `update` sends only the changed keys, like CloudKit.
    func wireOperation() -> JSONObject {
        var object: JSONObject = ["operationType": .string(kind.rawValue)]
        if let record {
            switch kind {
            case .update, .forceUpdate:
                object["record"] = .object(record.wireRecord(keys: record.existsOnServer ? record.changedKeys : nil))
            default:
                object["record"] = .object(record.wireRecord())
            }
        } else {
            var wire: JSONObject = [WireKey.recordName.rawValue: .string(recordID.recordName), WireKey.zoneID.rawValue: JSON.zoneID(recordID.zoneID)]
            if let changeTag { wire[.recordChangeTag] = .string(changeTag) }
            object["record"] = .object(wire)
        }
        return object
    }
}
