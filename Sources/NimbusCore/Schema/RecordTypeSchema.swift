import NimbusSupport
/// `development` (schema defined just in time) or `production` (only deployed types).
package enum Environment: String, Sendable, CaseIterable {
    case development
    case production
}

/// How long records of a type live (docs/api.md Schema): `days` after the earlier of `field` and the
/// record's creation time; 0 days means at the next prune.
package struct RetentionPolicy: Sendable, Hashable {
    package var days: Int
    package var field: String?

    package init(days: Int, field: String? = nil) {
        self.days = days
        self.field = field
    }
}

/// One record type of a container's schema.
package struct RecordTypeSchema: Sendable, Hashable {
    package var name: String
    package var fields: [String: FieldType]
    package var retention: RetentionPolicy?
    /// Events: created and deleted, never updated.
    package var appendOnly: Bool

    package init(name: String, fields: [String: FieldType] = [:], retention: RetentionPolicy? = nil, appendOnly: Bool = false) {
        self.name = name
        self.fields = fields
        self.retention = retention
        self.appendOnly = appendOnly
    }
}

/// The schema of one container in one environment.
package struct ContainerSchema: Sendable, Hashable {
    package var container: String
    package var recordTypes: [String: RecordTypeSchema]

    package init(container: String, recordTypes: [String: RecordTypeSchema] = [:]) {
        self.container = container
        self.recordTypes = recordTypes
    }
}

extension ContainerSchema {
    /// Reads a schema file (docs/api.md "Schema files"):
    /// `{"container": "...", "recordTypes": {"T": {"fields": {"f": "STRING", "g": {"type": "BYTES", "encrypted": true}},
    /// "retention": {"days": 30, "field": "f"}, "appendOnly": true}}}`.
    package static func parseFile(_ json: JSONValue) throws(SyncError) -> ContainerSchema {
        func fail(_ reason: String) -> SyncError { SyncError(.badRequest, "Invalid schema file: \(reason)") }
        guard case .string(let container)? = json["container"], Names.isValidContainer(container) else {
            throw fail("\"container\" must be a container id such as iCloud.com.example.App")
        }
        guard case .object(let types)? = json["recordTypes"] else { throw fail("\"recordTypes\" must be an object") }
        var schema = ContainerSchema(container: container)
        for (typeName, definition) in types {
            guard Names.isValidRecordType(typeName) else { throw fail("\(Names.quoted(typeName)) is not a valid record type name (a letter, then letters, digits or _)") }
            guard case .object(let fieldsObject)? = definition["fields"] else {
                throw fail("record type \(typeName) needs a \"fields\" object")
            }
            var recordType = RecordTypeSchema(name: typeName)
            for (fieldName, typeValue) in fieldsObject {
                guard Names.isValidFieldName(fieldName) else { throw fail("\(Names.quoted(fieldName)) in record type \(typeName) is not a valid field name (a letter, then letters, digits or _)") }
                recordType.fields[fieldName] = try FieldType(schemaFileEntry: typeValue, field: "\(typeName).\(fieldName)")
            }
            if let retention = definition["retention"], !retention.isNull {
                guard case .integer(let days)? = retention["days"], days >= 0, days <= 36500 else {
                    throw fail("retention of \(typeName) needs \"days\" between 0 and 36500")
                }
                var policy = RetentionPolicy(days: Int(days))
                if let field = retention["field"], !field.isNull {
                    if case .string(let fieldName) = field, let type = recordType.fields[fieldName], type.isEncrypted {
                        throw fail("the retention field of \(typeName) is \(fieldName), which is encrypted: the server cannot read its time; "
                            + "name a plain TIMESTAMP field")
                    }
                    guard case .string(let fieldName) = field, recordType.fields[fieldName] == .timestamp else {
                        let given = if case .string(let text) = field { Names.quoted(text) } else { "not a string" }
                        let timestamps = recordType.fields.filter { $0.value == .timestamp }.keys.sorted()
                        throw fail("the retention field of \(typeName) is \(given), but it must be one of its TIMESTAMP fields ("
                            + (timestamps.isEmpty ? "it has none" : timestamps.joined(separator: ", ")) + ")")
                    }
                    policy.field = fieldName
                }
                recordType.retention = policy
            }
            if let appendOnly = definition["appendOnly"], !appendOnly.isNull {
                guard case .bool(let flag) = appendOnly else { throw fail("appendOnly of \(typeName) must be true or false") }
                recordType.appendOnly = flag
            }
            schema.recordTypes[typeName] = recordType
        }
        return schema
    }

    /// The schema file form (keys sorted), as `nimbus schema show` prints it.
    package var fileJSON: JSONValue {
        var types = JSONObject()
        for name in recordTypes.keys.sorted() {
            guard let type = recordTypes[name] else { continue }
            var fields = JSONObject()
            for field in type.fields.keys.sorted() {
                if let fieldType = type.fields[field] { fields[field] = fieldType.schemaFileJSON }
            }
            var definition: JSONObject = ["fields": .object(fields)]
            if let retention = type.retention {
                var policy: JSONObject = ["days": .integer(Int64(retention.days))]
                if let field = retention.field { policy["field"] = .string(field) }
                definition["retention"] = .object(policy)
            }
            if type.appendOnly { definition["appendOnly"] = .bool(true) }
            types[name] = .object(definition)
        }
        return .object(["container": .string(container), "recordTypes": .object(types)])
    }
}

extension FieldType {
    /// A field of a schema file: `"STRING"`, or `{"type": "STRING", "encrypted": true}` (docs/api.md
    /// "Encrypted fields"). `field` ("Type.field") names it in errors.
    package init(schemaFileEntry entry: JSONValue, field: String) throws(SyncError) {
        func fail(_ reason: String) -> SyncError { SyncError(.badRequest, "Invalid schema file: field \(field) \(reason)") }
        var typeValue = entry
        var encrypted = false
        if case .object(let object) = entry {
            for key in object.keys where key != "type" && key != "encrypted" {
                throw fail("has the unknown member \(Names.quoted(key)); a field is \"STRING\" or {\"type\": \"STRING\", \"encrypted\": true}")
            }
            typeValue = object["type"] ?? .null
            if let flag = object["encrypted"], !flag.isNull {
                guard case .bool(let value) = flag else { throw fail("has \"encrypted\" that is not true or false") }
                encrypted = value
            }
        }
        guard case .string(let typeText) = typeValue, let type = FieldType(name: typeText), !type.isEncrypted else {
            if case .string(FieldType.encryptedBytesName) = typeValue {
                throw fail("is ENCRYPTED_BYTES, the type of encrypted values on the wire; declare the plaintext's type encrypted: "
                    + "{\"type\": \"BYTES\", \"encrypted\": true}")
            }
            let given = if case .string(let text) = typeValue { Names.quoted(text) } else { "not a string" }
            throw fail("has the unknown type \(given); the field types are "
                + FieldType.Base.allCases.map(\.rawValue).joined(separator: ", ") + " and their _LIST forms (STRING_LIST, …)")
        }
        if encrypted {
            guard type.canBeEncrypted else {
                throw fail("is \(type.name), which cannot be encrypted (the server follows references and keeps assets; "
                    + "encrypt an asset's bytes before uploading them)")
            }
            self = FieldType(type.base, isList: type.isList, isEncrypted: true)
        } else {
            self = type
        }
    }

    /// The schema file form: the name, or `{"type": "STRING", "encrypted": true}`.
    package var schemaFileJSON: JSONValue {
        isEncrypted ? .object(["type": .string(declaredName), "encrypted": .bool(true)]) : .string(name)
    }
}
