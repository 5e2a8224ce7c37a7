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

    /// Parses one element of `operations`. A malformed object is an item error (docs/api.md).
    package static func parse(_ json: JSONValue) -> Result<RecordOperation, ItemError> {
        func fail(_ reason: String, _ name: String? = nil) -> Result<RecordOperation, ItemError> {
            .failure(ItemError(.badRequest, reason, recordName: name))
        }
        guard case .object(let object) = json else { return fail("An operation must be an object.") }
        let record = object["record"]
        var name: String?
        if case .string(let text)? = record?["recordName"] { name = text }
        guard case .string(let kindText)? = object["operationType"] else {
            return fail("The operation has no operationType.", name)
        }
        guard let kind = Kind(rawValue: kindText) else {
            return fail("Unknown operationType \(Names.quoted(kindText)); use one of \(Kind.allCases.map(\.rawValue).joined(separator: ", ")).", name)
        }
        guard case .object(let recordObject)? = record else { return fail("The operation has no record object.", name) }
        var operation = RecordOperation(kind: kind, recordName: name ?? "")
        if let nameValue = recordObject["recordName"], !nameValue.isNull {
            guard case .string = nameValue else { return fail("recordName must be a string.") }
        }
        if operation.recordName.isEmpty {
            guard kind == .create else { return fail("\(kind.rawValue) needs a recordName.") }
        } else if !Names.isValidRecordName(operation.recordName) {
            return fail("Record name \(Names.quoted(operation.recordName)) is invalid: use 1–255 letters, digits, '-', '_', '.', ':'.", name)
        }
        if let typeValue = recordObject["recordType"], !typeValue.isNull {
            guard case .string(let typeText) = typeValue, Names.isValidRecordType(typeText) else {
                return fail("recordType must be a name starting with a letter, then letters, digits or '_'.", name)
            }
            operation.recordType = typeText
        } else if kind.createsMissing {
            return fail("\(kind.rawValue) needs a recordType.", name)
        }
        if let tagValue = recordObject["recordChangeTag"], !tagValue.isNull {
            guard case .string(let tag) = tagValue else { return fail("recordChangeTag must be a string.", name) }
            operation.changeTag = tag
        }
        if kind.checksTag, operation.changeTag == nil {
            return fail("\(kind.rawValue) needs the record's current recordChangeTag.", name)
        }
        if let fieldsValue = recordObject["fields"], !fieldsValue.isNull, !kind.isDelete {
            guard case .object(let fields) = fieldsValue else { return fail("fields must be an object.", name) }
            for (fieldName, entry) in fields {
                guard Names.isValidFieldName(fieldName) else {
                    return fail("Field name \(Names.quoted(fieldName)) is invalid: use a letter, then letters, digits or '_' (at most 255).", name)
                }
                guard case .object(let entryObject) = entry else {
                    return fail("Field \(fieldName) must be an object with \"value\" (and optionally \"type\").", name)
                }
                guard let value = entryObject["value"] else {
                    return fail("Field \(fieldName) has no \"value\"; send \"value\": null to remove it.", name)
                }
                var declared: String?
                if let typeValue = entryObject["type"], !typeValue.isNull {
                    guard case .string(let typeText) = typeValue else { return fail("The type of field \(fieldName) must be a string.", name) }
                    declared = typeText
                }
                operation.fields.append(RawField(name: fieldName, value: value, declaredType: declared))
            }
        }
        if let keys = object["desiredKeys"], !keys.isNull {
            guard let parsed = parseDesiredKeys(keys) else { return fail("desiredKeys must be an array of field names.", name) }
            operation.desiredKeys = parsed
        }
        return .success(operation)
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
