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
    /// `{"container": "...", "recordTypes": {"T": {"fields": {"f": "STRING"}, "retention": {"days": 30, "field": "f"}, "appendOnly": true}}}`.
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
                guard case .string(let typeText) = typeValue, let fieldType = FieldType(name: typeText) else {
                    let given = if case .string(let text) = typeValue { Names.quoted(text) } else { "not a string" }
                    throw fail("field \(typeName).\(fieldName) has the unknown type \(given); the field types are "
                        + FieldType.Base.allCases.map(\.rawValue).joined(separator: ", ") + " and their _LIST forms (STRING_LIST, …)")
                }
                recordType.fields[fieldName] = fieldType
            }
            if let retention = definition["retention"], !retention.isNull {
                guard case .integer(let days)? = retention["days"], days >= 0, days <= 36500 else {
                    throw fail("retention of \(typeName) needs \"days\" between 0 and 36500")
                }
                var policy = RetentionPolicy(days: Int(days))
                if let field = retention["field"], !field.isNull {
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
                if let fieldType = type.fields[field] { fields[field] = .string(fieldType.name) }
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
