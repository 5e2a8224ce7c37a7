import Foundation

/// CloudKit's nested names of a record.
extension CKRecord: NSCopying {
    public typealias RecordType = String
    public typealias FieldKey = String
    public typealias ReferenceAction = Reference.Action

    /// The keys of system fields a query or sort may name.
    public enum SystemFieldKey {
        public static let parent: FieldKey = "parent"
        public static let share: FieldKey = "share"
    }

    /// CloudKit's system record types.
    public enum SystemType {
        public static let userRecord: RecordType = "Users"
        public static let share: RecordType = "cloudkit.share"
    }

    /// The user who created the record (the server's user record name).
    public var creatorUserRecordID: ID? { record.created?.userRecordName.map { ID(recordName: $0) } }
    /// The user who last saved the record.
    public var lastModifiedUserRecordID: ID? { record.modified?.userRecordName.map { ID(recordName: $0) } }

    /// The parent reference of CloudKit's share hierarchies. Nimbus has no sharing: it is kept
    /// on this object and in `encodeSystemFields(with:)`, not sent to the server.
    public var parent: Reference? {
        get { extras.withLock { $0.parent } }
        set { extras.withLock { $0.parent = newValue } }
    }

    public func setParent(_ parentRecord: CKRecord?) {
        parent = parentRecord.map { Reference(recordID: $0.recordID, action: .none) }
    }

    public func setParent(_ parentID: ID?) { parent = parentID.map { Reference(recordID: $0, action: .none) } }

    /// Key-value coding over the fields, as CloudKit's `CKRecord` does it; values that are not
    /// `CKRecordValue`s (and `NSNull`) remove the field.
#if !canImport(Darwin)
    // Linux's NSObject has no key-value coding; on Apple platforms CKRecord overrides NSObject's (CKRecord.swift).
    public func setValuesForKeys(_ keyedValues: [String: Any]) {
        for (key, value) in keyedValues { setValue(value, forKey: key) }
    }

    public func setValue(_ value: Any?, forKey key: String) { self[key] = value as? any CKRecordValueProtocol }
    public func value(forKey key: String) -> Any? { self[key] }
    public func dictionaryWithValues(forKeys keys: [String]) -> [String: Any] { fieldValues(forKeys: keys) }
#endif

    func fieldValues(forKeys keys: [String]) -> [String: Any] {
        var values: [String: Any] = [:]
        for key in keys { values[key] = self[key] ?? NSNull() }
        return values
    }

    /// A copy with the same identity, system fields and fields (CloudKit's `NSCopying`; `copy()` is NSObject's).
    public func copy(with zone: NSZone? = nil) -> Any {
        let copy = CKRecord(record: record, database: database)
        copy.parent = parent
        return copy
    }
}

/// The parts of a CloudKit record Nimbus keeps only on the client.
struct CKRecordExtras {
    var parent: CKRecord.Reference?
}

extension CKRecord {
    /// The words of the record's string fields (string lists included), split at whitespace, as
    /// CloudKit's `allTokens()`. Nimbus has no full-text search: save them in a STRING_LIST field
    /// and query it with `CONTAINS` instead of `self CONTAINS`.
    public func allTokens() -> [String] {
        storage.withLock { record in
            record.fields.keys.sorted().flatMap { key -> [String] in
                switch record.fields[key] {
                case .string(let text)?: return text.split(whereSeparator: \.isWhitespace).map(String.init)
                case .list(let values, .string)?:
                    return values.compactMap(\.stringValue).flatMap { $0.split(whereSeparator: \.isWhitespace).map(String.init) }
                default: return []
                }
            }
        }
    }
}
