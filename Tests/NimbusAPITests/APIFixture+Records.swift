import Foundation
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// Helpers of the record, zone and schema suites (ported from the curl scenarios 30–36, 60).
extension APIFixture {
    /// `POST /database/1/<container>/<environment>/private/<operation>` of any container.
    func database(_ operation: String, token: String, _ body: String = "{}", container: String, environment: String = "development") async -> Answer {
        await send("POST", "/database/1/\(container)/\(environment)/private/\(operation)", token: token, body: body)
    }

    /// `GET /database/1/<container>/development/private/<operation>` (zones/list, users/current).
    func getDatabase(_ operation: String, token: String, container: String? = nil) async -> Answer {
        await send("GET", "/database/1/\(container ?? self.container)/development/private/\(operation)", token: token)
    }

    /// A new device token of `user` with its id (the user is created if needed).
    func issue(user: String = "alice", device: String) async throws -> IssuedToken {
        if try await !database.store.accounts.listUsers().contains(where: { $0.name == user }) {
            _ = try await database.store.accounts.addUser(name: user)
        }
        return try await database.store.accounts.issueToken(user: user, device: device)
    }

    /// Sends a request whose body is raw bytes (invalid UTF-8, say).
    func send(_ method: String, _ path: String, token: String, bytes: [UInt8]) async -> Answer {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "nimbus.test")
        headers.add(name: "Authorization", value: "Bearer \(token)")
        let sink = CapturingSink()
        api.handler(HTTPRequest(head: HTTPRequestHead(method: method, target: path, headers: headers), body: bytes), HTTPResponseWriter(sink: sink))
        return await sink.answer()
    }

    /// `records/modify` of `operations` (JSON objects) in `zone`.
    func modify(_ token: String, zone: String? = nil, _ operations: [String], container: String? = nil, environment: String = "development") async -> Answer {
        let zoneMember = zone.map { #""zoneID":{"zoneName":"\#($0)"},"# } ?? ""
        return await database("records/modify", token: token, #"{\#(zoneMember)"operations":[\#(operations.joined(separator: ","))]}"#,
                              container: container ?? self.container, environment: environment)
    }

    /// `records/changes` of `zone` from `syncToken` (none: from the start).
    func changes(_ token: String, zone: String = "_defaultZone", syncToken: String? = nil, limit: Int? = nil, extra: String = "", container: String? = nil) async -> Answer {
        var body = #"{"zoneID":{"zoneName":"\#(zone)"}"#
        if let syncToken { body += #","syncToken":"\#(syncToken)""# }
        if let limit { body += #","resultsLimit":\#(limit)"# }
        return await database("records/changes", token: token, body + extra + "}", container: container ?? self.container)
    }

    /// `records/lookup` of `names` in `zone`.
    func lookup(_ token: String, zone: String? = nil, _ names: [String], container: String? = nil, environment: String = "development") async -> Answer {
        let zoneMember = zone.map { #""zoneID":{"zoneName":"\#($0)"},"# } ?? ""
        let records = names.map { #"{"recordName":"\#($0)"}"# }.joined(separator: ",")
        return await database("records/lookup", token: token, #"{\#(zoneMember)"records":[\#(records)]}"#,
                              container: container ?? self.container, environment: environment)
    }

    /// `zones/modify` of `create:NAME` / `delete:NAME` pairs.
    func modifyZones(_ token: String, _ pairs: [String], container: String? = nil) async -> Answer {
        let operations = pairs.map { pair -> String in
            let parts = pair.split(separator: ":", maxSplits: 1).map(String.init)
            return #"{"operationType":"\#(parts[0])","zone":{"zoneID":{"zoneName":"\#(parts.count > 1 ? parts[1] : "")"}}}"#
        }
        return await database("zones/modify", token: token, #"{"operations":[\#(operations.joined(separator: ","))]}"#, container: container ?? self.container)
    }

    /// Imports `deploy/schemas/<file>` into both environments (as `nimbus schema import` does).
    func importSchema(_ file: String) async throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../deploy/schemas/\(file)").standardizedFileURL
        let schema = try ContainerSchema.parseFile(try JSONValue.parse(Array(try Data(contentsOf: url))))
        for environment in Environment.allCases { try await database.store.schemas.importSchema(schema, environment: environment) }
    }

    /// The schema of `container` as `nimbus schema show` prints it (sorted keys).
    func schemaText(_ container: String, environment: Environment = .development) async throws -> String {
        String(decoding: try await database.store.schemas.schema(container: container, environment: environment).fileJSON.serialized(sortedKeys: true), as: UTF8.self)
    }
}

extension Limits {
    /// The default limits without the per-token request rate (the suites send faster than a device).
    static var unthrottled: Limits {
        var limits = Limits()
        limits.requestsPerSecondPerToken = 0
        return limits
    }
}

/// Operation bodies of `records/modify`.
enum Op {
    /// An operation of `kind` on record `name` with `fields` (a JSON object) and an optional tag.
    static func record(_ kind: String, _ name: String, _ type: String = "Note", fields: String = "{}", tag: String? = nil) -> String {
        let tagMember = tag.map { #","recordChangeTag":"\#($0)""# } ?? ""
        return #"{"operationType":"\#(kind)","record":{"recordName":"\#(name)","recordType":"\#(type)"\#(tagMember),"fields":\#(fields)}}"#
    }

    /// A delete (`delete` with a tag, or `forceDelete`) of record `name`.
    static func delete(_ name: String, tag: String? = nil) -> String {
        if let tag { return #"{"operationType":"delete","record":{"recordName":"\#(name)","recordChangeTag":"\#(tag)"}}"# }
        return #"{"operationType":"forceDelete","record":{"recordName":"\#(name)"}}"#
    }
}

extension Answer {
    /// The `records` items.
    var records: [JSONValue] { items("records") }

    /// Each record item's code: its `serverErrorCode`, or `ok` (as `item_codes` in the scenarios).
    var codes: [String] { records.map { $0["serverErrorCode"]?.stringValue ?? "ok" } }

    /// Each record item as `NAME TAG`, or `NAME -` for a tombstone (as `record_summary`).
    var summary: [String] {
        records.compactMap { item in
            guard let name = item["recordName"]?.stringValue, item["serverErrorCode"] == nil else { return nil }
            return item["deleted"]?.boolValue == true ? "\(name) -" : "\(name) \(item["recordChangeTag"]?.stringValue ?? "")"
        }
    }

    /// The record names of live (non-deleted, non-error) items, in answer order.
    var names: [String] {
        records.filter { $0["serverErrorCode"] == nil && $0["deleted"]?.boolValue != true }.compactMap { $0["recordName"]?.stringValue }
    }

    /// The item of record `name`.
    func recordItem(_ name: String) -> JSONValue? { records.first { $0["recordName"]?.stringValue == name } }

    /// The change tag of record `name`.
    func tag(_ name: String) -> String? { recordItem(name)?["recordChangeTag"]?.stringValue }

    /// The value of field `field` of record `name`.
    func value(_ name: String, _ field: String) -> JSONValue? { recordItem(name)?["fields"]?[field]?["value"] }

    var syncToken: String? { json["syncToken"]?.stringValue }
    var moreComing: Bool? { json["moreComing"]?.boolValue }

    /// The zone names of a zones answer, sorted.
    var zoneNames: [String] { items("zones").compactMap { $0["zoneID"]?["zoneName"]?.stringValue }.sorted() }

    /// Each zones/modify or zones/lookup item as `NAME ok|deleted|CODE`.
    var zoneItems: [String] {
        items("zones").map { item in
            let name = item["zoneID"]?["zoneName"]?.stringValue ?? item["zoneName"]?.stringValue ?? "?"
            if let code = item["serverErrorCode"]?.stringValue { return "\(name) \(code)" }
            return item["deleted"]?.boolValue == true ? "\(name) deleted" : "\(name) ok"
        }
    }

    /// The syncToken beside zone `name` in a zones answer.
    func zoneToken(_ name: String) -> String? {
        items("zones").first { $0["zoneID"]?["zoneName"]?.stringValue == name }?["syncToken"]?.stringValue
    }
}

extension JSONValue {
    /// An error item's shape: its code, a UUID and a sentence of a reason (`expect_error_body`).
    var isErrorBody: Bool {
        guard self["serverErrorCode"]?.stringValue != nil, let uuid = self["uuid"]?.stringValue, UUID(uuidString: uuid) != nil,
              let reason = self["reason"]?.stringValue else { return false }
        return reason.count >= 5
    }
}
