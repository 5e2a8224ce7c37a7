import Foundation
import NimbusCore
import NimbusSupport
import NimbusPostgres

/// Container schemas: what the development environment learned and what production was given.
package struct SchemaStore: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded
}

extension SchemaStore {
    /// The container's record types in one environment.
    static func loadSchema(_ connection: PGConnection, container: String, environment: Environment) throws -> [String: RecordTypeSchema] {
        let text = try connection.queryFirst("SELECT \(schemaAggregate(container: container, environment: environment))") { try $0.string(0) }
        return decodeSchemaAggregate(text ?? "[]")
    }

    /// A scalar subquery giving the schema as one JSON array, so that statements that need it
    /// (the write path's zone lock) fetch it without another round trip.
    static func schemaAggregate(container: String, environment: Environment) -> SQL {
        """
        (SELECT COALESCE(json_agg(json_build_array(s.record_type, s.fields, s.retention_days, s.retention_field, s.append_only)), '[]')::text
         FROM schema_record_types s WHERE s.container = \(container) AND s.environment = \(environment.rawValue))
        """
    }

    /// A scalar subquery giving the version of the container's schema (0 before it has any type).
    static func schemaVersion(container: String, environment: Environment) -> SQL {
        """
        COALESCE((SELECT v.version FROM schema_versions v WHERE v.container = \(container) AND v.environment = \(environment.rawValue)), 0)
        """
    }

    static func decodeSchemaAggregate(_ text: String) -> [String: RecordTypeSchema] {
        guard case .array(let rows)? = try? JSONValue.parse(text) else { return [:] }
        var schema: [String: RecordTypeSchema] = [:]
        for case .array(let row) in rows where row.count == 5 {
            guard case .string(let name) = row[0] else { continue }
            var type = RecordTypeSchema(name: name, appendOnly: row[4].boolValue ?? false)
            if case .object(let fields) = row[1] {
                for (field, value) in fields {
                    if let fieldType = try? FieldType(schemaFileEntry: value, field: field) { type.fields[field] = fieldType }
                }
            }
            if case .integer(let days) = row[2] { type.retention = RetentionPolicy(days: Int(days), field: row[3].stringValue) }
            schema[name] = type
        }
        return schema
    }

    /// Adds just-in-time fields to the development schema under the types' row locks. Returns
    /// the fields whose type another writer defined differently in the meantime.
    static func addToSchema(_ connection: PGConnection, container: String, environment: Environment,
                            additions: [String: [String: FieldType]]) throws -> [(type: String, field: String, existing: FieldType)] {
        var conflicts: [(String, String, FieldType)] = []
        for typeName in additions.keys.sorted() {
            let fields = additions[typeName] ?? [:]
            try connection.run("""
                INSERT INTO schema_record_types (container, environment, record_type)
                VALUES (\(container), \(environment.rawValue), \(typeName)) ON CONFLICT DO NOTHING
                """)
            let current = try connection.queryFirst("""
                SELECT fields FROM schema_record_types
                WHERE container = \(container) AND environment = \(environment.rawValue) AND record_type = \(typeName)
                FOR UPDATE
                """) { try $0.jsonb(0) } ?? "{}"
            let currentObject = (try? JSONValue.parse(current))?.objectValue ?? JSONObject()
            var merged = currentObject
            for (field, type) in fields {
                if let existing = currentObject[field] {
                    if let existingType = try? FieldType(schemaFileEntry: existing, field: field), existingType != type {
                        conflicts.append((typeName, field, existingType))
                    }
                } else {
                    merged[field] = type.schemaFileJSON
                }
            }
            if merged != currentObject {
                try connection.run("""
                    UPDATE schema_record_types SET fields = \(PGData.jsonb(JSONValue.object(merged).serializedString)), updated_at = now()
                    WHERE container = \(container) AND environment = \(environment.rawValue) AND record_type = \(typeName)
                    """)
            }
        }
        return conflicts
    }

    /// The schema of a container in one environment (for `nimbus schema show`).
    package func schema(container: String, environment: Environment) async throws -> ContainerSchema {
        let types = try await pool.withConnection { connection in
            try Self.loadSchema(connection, container: container, environment: environment)
        }
        return ContainerSchema(container: container, recordTypes: types)
    }

    /// Loads a schema file into an environment. Fields are added; a field's type never changes
    /// (that would make stored records unreadable), so a different type is refused. Retention
    /// and append-only flags are set as the file says.
    package func importSchema(_ schema: ContainerSchema, environment: Environment) async throws {
        try await importSchema(schema, environment: environment, alongside: nil)
    }

    /// `importSchema`, running `alongside` in the import's transaction.
    func importSchema(_ schema: ContainerSchema, environment: Environment, alongside: InTransaction?) async throws {
        try await pool.withTransaction { connection in
            try Self.importSchema(connection, schema, environment: environment)
            try alongside?(connection)
        }
    }

    /// Imports on `connection`, in the caller's transaction.
    static func importSchema(_ connection: PGConnection, _ schema: ContainerSchema, environment: Environment) throws {
        let current = try Self.loadSchema(connection, container: schema.container, environment: environment)
        for (name, type) in schema.recordTypes {
            for (field, fieldType) in type.fields {
                if let existing = current[name]?.fields[field], existing != fieldType {
                    throw SyncError(.badRequest, "Field \(name).\(field) is \(existing.schemaName) in \(environment.rawValue); it cannot become \(fieldType.schemaName).")
                }
            }
        }
        for name in schema.recordTypes.keys.sorted() {
            guard let type = schema.recordTypes[name] else { continue }
            var fields = JSONObject()
            for (field, fieldType) in current[name]?.fields ?? [:] { fields[field] = fieldType.schemaFileJSON }
            for (field, fieldType) in type.fields { fields[field] = fieldType.schemaFileJSON }
            let fieldsText = JSONValue.object(fields).serialized(sortedKeys: true)
            try connection.run("""
                INSERT INTO schema_record_types (container, environment, record_type, fields, retention_days, retention_field, append_only)
                VALUES (\(schema.container), \(environment.rawValue), \(name), \(PGData.jsonb(String(decoding: fieldsText, as: UTF8.self))),
                        \(type.retention.map { Int64($0.days) }), \(type.retention?.field), \(type.appendOnly))
                ON CONFLICT (container, environment, record_type) DO UPDATE SET
                    fields = excluded.fields, retention_days = excluded.retention_days,
                    retention_field = excluded.retention_field, append_only = excluded.append_only, updated_at = now()
                """)
        }
    }

    /// Copies the development schema of a container to production.
    package func deploySchema(container: String) async throws -> ContainerSchema {
        try await deploySchema(container: container, alongside: nil)
    }

    /// `deploySchema` in one transaction (development as read is what production gets), running
    /// `alongside` with what it deployed.
    func deploySchema(container: String,
                      alongside: (@Sendable (PGConnection, ContainerSchema) throws -> Void)?) async throws -> ContainerSchema {
        try await pool.withTransaction { connection in
            let development = ContainerSchema(container: container,
                                              recordTypes: try Self.loadSchema(connection, container: container, environment: .development))
            guard !development.recordTypes.isEmpty else {
                throw SyncError(.notFound, "Container \(container) has no development schema to deploy.")
            }
            try Self.importSchema(connection, development, environment: .production)
            try alongside?(connection, development)
            return development
        }
    }
}
