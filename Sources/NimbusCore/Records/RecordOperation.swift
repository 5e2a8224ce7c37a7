import NimbusSupport
/// One field of an operation as sent: a value (or null to remove the field), maybe with a type.
package struct RawField: Sendable, Hashable {
    package var name: String
    /// `.null` removes the field.
    package var value: JSONValue
    package var declaredType: String?

    package init(name: String, value: JSONValue, declaredType: String? = nil) {
        self.name = name
        self.value = value
        self.declaredType = declaredType
    }
}

/// An error about one record, zone or subscription inside a 200 answer.
package struct ItemError: Error, Sendable, Hashable {
    package var code: SyncError.Code
    package var reason: String
    package var recordName: String?
    /// CONFLICT carries the current record.
    package var serverRecord: Record?
    /// Set when production lacks the record type (`field` nil) or a field of it: the store
    /// words the reason with both environments' schemas (`SchemaAdvice`).
    package var missingInProduction: (recordType: String, field: String?)? {
        get { missing.map { ($0.recordType, $0.field) } }
        set { missing = newValue.map { MissingSchema(recordType: $0.recordType, field: $0.field) } }
    }
    private var missing: MissingSchema?

    private struct MissingSchema: Sendable, Hashable {
        var recordType: String
        var field: String?
    }

    package init(_ code: SyncError.Code, _ reason: String, recordName: String? = nil, serverRecord: Record? = nil) {
        self.code = code
        self.reason = reason
        self.recordName = recordName
        self.serverRecord = serverRecord
    }
}

/// One operation of `records/modify`, parsed but not yet typed against the schema.
package struct RecordOperation: Sendable, Hashable {
    package enum Kind: String, Sendable, CaseIterable {
        case create, update, forceUpdate, replace, forceReplace, delete, forceDelete

        package var isDelete: Bool { self == .delete || self == .forceDelete }
        /// Kinds that check `recordChangeTag`.
        package var checksTag: Bool { self == .update || self == .replace || self == .delete }
        /// Kinds that create a missing record.
        package var createsMissing: Bool { self == .create || self == .forceUpdate || self == .forceReplace }
        /// Kinds that replace all fields (the others merge the given fields).
        var replacesAllFields: Bool { self == .create || self == .replace || self == .forceReplace }
    }

    package var kind: Kind
    /// Empty on `create` means "the server picks a UUID".
    package var recordName: String
    package var recordType: String?
    package var changeTag: String?
    package var fields: [RawField]
    package var desiredKeys: Set<String>?

    package init(kind: Kind, recordName: String, recordType: String? = nil, changeTag: String? = nil,
                 fields: [RawField] = [], desiredKeys: Set<String>? = nil) {
        self.kind = kind
        self.recordName = recordName
        self.recordType = recordType
        self.changeTag = changeTag
        self.fields = fields
        self.desiredKeys = desiredKeys
    }

    /// `desiredKeys`: an array of strings; nil when malformed.
    package static func parseDesiredKeys(_ json: JSONValue) -> Set<String>? {
        guard case .array(let values) = json else { return nil }
        var keys = Set<String>()
        for value in values {
            guard case .string(let key) = value else { return nil }
            keys.insert(key)
        }
        return keys
    }
}
