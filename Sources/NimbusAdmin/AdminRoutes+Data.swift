import Foundation
import NimbusAPI
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// The console's data pages: records, schema, retention and storage.
extension AdminRoutes {
    func registerData(in router: inout HTTPRouter) {
        get(&router, "/api/users/:user/zones") { request, _ in try await zones(request) }
        get(&router, "/api/records") { request, _ in try await records(request) }
        post(&router, "/api/records/delete") { request, admin in try await deleteRecord(request, admin: admin) }
        getResponse(&router, "/api/assets") { request, _ in try await asset(request) }
        get(&router, "/api/schema") { request, _ in try await schema(request) }
        post(&router, "/api/schema/import") { request, admin in try await importSchema(request, admin: admin) }
        post(&router, "/api/schema/deploy") { request, admin in try await deploySchema(request, admin: admin) }
    }

    // MARK: - Records

    private func zones(_ request: HTTPRequest) async throws -> JSONValue {
        let user = request.pathParameters["user"] ?? ""
        return .object(["user": .string(user), "zones": .array(try await store.admin.zones(user: user).map { zone in
            .object(["container": .string(zone.container), "environment": .string(zone.environment), "zoneName": .string(zone.zoneName),
                     "records": .integer(Int64(zone.liveRecords)), "tombstones": .integer(Int64(zone.tombstones))])
        })])
    }

    /// The address of a zone from query parameters (GET) or a body (POST).
    private func address(_ value: (String) -> String?) throws -> RecordBrowse {
        func required(_ name: String) throws -> String {
            guard let text = value(name), !text.isEmpty else { throw SyncError(.badRequest, "\(name) is required.") }
            return text
        }
        let container = try required("container")
        guard Names.isValidContainer(container) else { throw SyncError(.badRequest, "container \(Names.quoted(container)) is not a container id.") }
        guard let environment = Environment(rawValue: try required("environment")) else {
            throw SyncError(.badRequest, "environment must be development or production.")
        }
        let zone = try required("zoneName")
        guard Names.isValidZoneName(zone) else { throw SyncError(.badRequest, "zoneName \(Names.quoted(zone)) is not a zone name.") }
        return RecordBrowse(user: try required("user"), container: container, environment: environment, zoneName: zone)
    }

    private func records(_ request: HTTPRequest) async throws -> JSONValue {
        var browse = try address { request.queryParameter($0) }
        if let type = request.queryParameter("recordType"), !type.isEmpty {
            guard Names.isValidRecordType(type) else { throw SyncError(.badRequest, "recordType \(Names.quoted(type)) is not a record type name.") }
            browse.recordType = type
        }
        browse.includeTombstones = request.queryParameter("tombstones") == "true"
        browse.after = request.queryParameter("after") ?? ""
        browse.limit = try Self.limit(request, default: 50, maximum: 200)
        let page = try await store.admin.browse(browse)
        return .object(["moreComing": .bool(page.moreComing), "records": .array(page.records.map { record in
            .object(["recordName": .string(record.recordName), "recordType": .string(record.recordType),
                     "fields": Self.consoleFields(record.fields),
                     "modifiedAt": Self.milliseconds(record.modifiedAt), "modifiedByDevice": .string(record.modifiedByDevice),
                     "deleted": .bool(record.deleted)])
        })])
    }

    /// A record's stored fields as the console shows them: an encrypted value by its size only
    /// (`{"type": "ENCRYPTED_BYTES", "size": N}`, N its decoded bytes), never its ciphertext
    /// (docs/api.md "Encrypted fields").
    static func consoleFields(_ text: String) -> JSONValue {
        guard case .object(var fields)? = try? JSONValue.parse(Array(text.utf8)) else { return .object([:]) }
        for (name, entry) in fields {
            guard case .string(FieldType.encryptedBytesName)? = entry["type"] else { continue }
            let size = if case .string(let ciphertext)? = entry["value"] { Base64Text.decodedCount(ciphertext) } else { 0 }
            fields[name] = .object(["type": .string(FieldType.encryptedBytesName), "size": .integer(Int64(size))])
        }
        return .object(fields)
    }

    /// `{"user", "container", "environment", "zoneName", "recordName", "confirm"}`: `confirm` must
    /// repeat the record name (the page's typed confirmation).
    private func deleteRecord(_ request: HTTPRequest, admin: AdminIdentity) async throws -> JSONValue {
        let body = try RequestInput.parseBody(request.body)
        let text = { (name: String) -> String? in if case .string(let value)? = body[name] { value } else { nil } }
        let address = try address(text)
        guard let name = text("recordName"), Names.isValidRecordName(name) else {
            throw SyncError(.badRequest, "recordName must name a record (\(Names.quoted(text("recordName") ?? "")) is not a record name).")
        }
        guard text("confirm") == name else {
            throw SyncError(.badRequest, "Type the record's name into confirm to delete it.")
        }
        try await store.admin.deleteRecord(address, recordName: name, by: admin, limits: limits)
        return .object(["recordName": .string(name), "deleted": .bool(true)])
    }

    /// `?user&container&environment&fileChecksum&size`: the asset's bytes as a download (the
    /// zone is not part of an asset's address; any zone name passes the address check).
    private func asset(_ request: HTTPRequest) async throws -> HTTPResponse {
        let address = try address { name in name == "zoneName" ? Names.defaultZone : request.queryParameter(name) }
        guard let checksum = request.queryParameter("fileChecksum"), let size = request.queryParameter("size").flatMap({ Int64($0) }) else {
            throw SyncError(.badRequest, "fileChecksum and size are required.")
        }
        guard size <= Int64(limits.maxAssetBytes) else {
            throw SyncError(.badRequest, "size is larger than any asset may be (maxAssetBytes \(limits.maxAssetBytes)).")
        }
        let bytes = try await store.admin.assetBytes(address, fileChecksum: checksum, size: size)
        var response = HTTPResponse(status: .ok, contentType: "application/octet-stream", body: bytes)
        response.headers.add(name: "Content-Disposition", value: "attachment; filename=\"asset.bin\"")
        return response
    }

    // MARK: - Schema

    private func schema(_ request: HTTPRequest) async throws -> JSONValue {
        let containers = try await store.admin.schemaContainers()
        guard let container = request.queryParameter("container").flatMap({ $0.isEmpty ? nil : $0 }) ?? containers.first else {
            return .object(["containers": .array([]), "differences": .array([])])
        }
        guard Names.isValidContainer(container) else { throw SyncError(.badRequest, "container \(Names.quoted(container)) is not a container id.") }
        let development = try await store.schemas.schema(container: container, environment: .development)
        let production = try await store.schemas.schema(container: container, environment: .production)
        return .object(["containers": .array(containers.map(JSONValue.string)), "container": .string(container),
                        "development": Self.describe(development), "production": Self.describe(production),
                        "differences": .array(SchemaDifference.between(development: development, production: production).map { difference in
                            .object(["kind": .string(difference.kind.rawValue), "recordType": .string(difference.recordType),
                                     "field": difference.field.map(JSONValue.string) ?? .null,
                                     "development": difference.development.map(JSONValue.string) ?? .null,
                                     "production": difference.production.map(JSONValue.string) ?? .null,
                                     "blocksDeploy": .bool(difference.blocksDeploy)])
                        })])
    }

    static func describe(_ schema: ContainerSchema) -> JSONValue {
        .object(JSONObject(schema.recordTypes.keys.sorted().compactMap { name in
            schema.recordTypes[name].map { type in
                (name, .object(["fields": .object(JSONObject(type.fields.keys.sorted().map { ($0, .string(type.fields[$0]?.schemaName ?? "")) })),
                                "retentionDays": type.retention.map { .integer(Int64($0.days)) } ?? .null,
                                "appendOnly": .bool(type.appendOnly)]))
            }
        }))
    }

    /// The body is a schema file (docs/api.md "Schema files"); `?environment=` (default development).
    private func importSchema(_ request: HTTPRequest, admin: AdminIdentity) async throws -> JSONValue {
        let environmentName = request.queryParameter("environment").flatMap { $0.isEmpty ? nil : $0 } ?? "development"
        guard let environment = Environment(rawValue: environmentName) else {
            throw SyncError(.badRequest, "environment must be development or production.")
        }
        let schema = try ContainerSchema.parseFile(try RequestInput.parseBody(request.body))
        try await store.admin.importSchema(schema, environment: environment, by: admin)
        return .object(["container": .string(schema.container), "environment": .string(environment.rawValue),
                        "recordTypes": .array(schema.recordTypes.keys.sorted().map(JSONValue.string))])
    }

    /// `{"container"}`: copies development to production.
    private func deploySchema(_ request: HTTPRequest, admin: AdminIdentity) async throws -> JSONValue {
        guard case .string(let container)? = try RequestInput.parseBody(request.body)["container"], Names.isValidContainer(container) else {
            throw SyncError(.badRequest, "The body must be {\"container\": \"iCloud....\"} naming a container.")
        }
        let deployed = try await store.admin.deploySchema(container: container, by: admin)
        return .object(["container": .string(container), "deployed": .array(deployed.recordTypes.keys.sorted().map(JSONValue.string))])
    }
}
