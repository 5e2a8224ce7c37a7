import Foundation
import NimbusCore
import NimbusHTTP
import NimbusStore

/// `records/modify`, `records/lookup`, `records/query`, `records/changes`.
struct RecordHandlers: Sendable {
    let records: RecordStore
    let schemas: SchemaStore
    /// For download URLs in answers.
    let assets: AssetStore
    let hub: ChangeHub
    let limits: Limits

    func modify(_ context: DatabaseRoutes.Context) async throws -> HTTPResponse {
        let body = context.body
        let zoneName = try Wire.zoneName(body)
        guard case .array(let entries)? = body["operations"] else {
            throw SyncError(.badRequest, "records/modify needs an \"operations\" array.")
        }
        guard entries.count <= limits.maxOperationsPerRequest else {
            throw SyncError(.limitExceeded, "The request has \(entries.count) operations; maxOperationsPerRequest is \(limits.maxOperationsPerRequest).")
        }
        var atomic = false
        if let value = body["atomic"], !value.isNull {
            guard case .bool(let flag) = value else { throw SyncError(.badRequest, "atomic must be true or false.") }
            atomic = flag
        }
        var sharedKeys: Set<String>?
        if let keys = body["desiredKeys"], !keys.isNull {
            guard let parsed = RecordOperation.parseDesiredKeys(keys) else { throw SyncError(.badRequest, "desiredKeys must be an array of field names.") }
            sharedKeys = parsed
        }
        var operations: [Result<RecordOperation, ItemError>] = []
        var seen = Set<String>()
        for entry in entries {
            var parsed = RecordOperation.parse(entry)
            if case .success(let operation) = parsed, let problem = Self.zoneContradiction(entry, requestZone: zoneName) {
                parsed = .failure(ItemError(.badRequest, problem, recordName: operation.recordName))
            }
            if case .success(var operation) = parsed {
                if operation.recordName.isEmpty { operation.recordName = UUID().uuidString }
                if operation.desiredKeys == nil { operation.desiredKeys = sharedKeys }
                guard seen.insert(operation.recordName).inserted else {
                    throw SyncError(.badRequest, "Record \(operation.recordName) appears in more than one operation; send one operation per record.")
                }
                parsed = .success(operation)
            }
            operations.append(parsed)
        }
        let results = try await records.modifyRecords(context.session, zoneName: zoneName, operations: operations, atomic: atomic, limits: limits,
                                                    unverifiedTokenDigest: context.sessionIsVerified ? nil : context.tokenDigest)
        let keysByName = Dictionary(operations.compactMap { try? $0.get() }.map { ($0.recordName, $0.desiredKeys) }, uniquingKeysWith: { first, _ in first })
        // Written straight to bytes; saved records without assets (no download URLs to add) and
        // without desiredKeys skip the JSON tree (the same bytes: RecordTests).
        var bytes: [UInt8] = Array(#"{"records":["#.utf8)
        bytes.reserveCapacity(results.count * 640)
        for (index, result) in results.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            switch result {
            case .saved(let record, nil) where !record.fields.values.contains(where: { !$0.assets.isEmpty }):
                record.writeJSON(to: &bytes)
            case .saved(let record, let keys):
                bytes += context.render(record, desiredKeys: keys, assets: assets).serialized()
            case .deleted(let name):
                bytes += JSONValue.object(["recordName": .string(name), "deleted": .bool(true)]).serialized()
            case .failed(let error):
                bytes += Wire.item(error, desiredKeys: error.recordName.flatMap { keysByName[$0] ?? nil },
                                   render: { context.render($0, desiredKeys: $1, assets: assets) }).serialized()
            }
        }
        bytes += Array("]}".utf8)
        return HTTPResponse(status: .ok, contentType: "application/json; charset=utf-8", body: bytes)
    }

    /// A record's own `zoneID` must name the request's zone (docs/api.md: ambiguous input is refused).
    static func zoneContradiction(_ entry: JSONValue, requestZone: String) -> String? {
        guard let zone = entry["record"]?["zoneID"], !zone.isNull else { return nil }
        guard case .string(let name)? = zone["zoneName"] else {
            return "The record's zoneID must be {\"zoneName\": \"...\"}."
        }
        guard name == requestZone else {
            return "The record names zone \(name), but the request is for zone \(requestZone); send it in a request whose zoneID is \(name)."
        }
        return nil
    }

    func lookup(_ context: DatabaseRoutes.Context) async throws -> HTTPResponse {
        let body = context.body
        let zoneName = try Wire.zoneName(body)
        guard case .array(let entries)? = body["records"] else {
            throw SyncError(.badRequest, "records/lookup needs a \"records\" array of {\"recordName\"}.")
        }
        guard entries.count <= limits.maxOperationsPerRequest else {
            throw SyncError(.limitExceeded, "The request names \(entries.count) records; maxOperationsPerRequest is \(limits.maxOperationsPerRequest).")
        }
        var desiredKeys: Set<String>?
        if let keys = body["desiredKeys"], !keys.isNull {
            guard let parsed = RecordOperation.parseDesiredKeys(keys) else { throw SyncError(.badRequest, "desiredKeys must be an array of field names.") }
            desiredKeys = parsed
        }
        var names: [String?] = []
        for entry in entries {
            guard case .string(let name)? = entry["recordName"] else {
                throw SyncError(.badRequest, "Each element of records must be {\"recordName\": \"...\"}.")
            }
            names.append(Names.isValidRecordName(name) ? name : nil)
        }
        let found = try await records.lookupRecords(context.session, zoneName: zoneName, names: names.compactMap { $0 })
        var iterator = found.makeIterator()
        var items: [JSONValue] = []
        for (index, name) in names.enumerated() {
            guard let name else {
                let text = entries[index]["recordName"]?.stringValue ?? ""
                items.append(Wire.item(ItemError(.badRequest, "Record name \(Names.quoted(text)) is invalid.", recordName: text)))
                continue
            }
            if let record = iterator.next() ?? nil {
                items.append(context.render(record, desiredKeys: desiredKeys, assets: assets))
            } else {
                items.append(Wire.item(ItemError(.notFound, "Record \(name) does not exist.", recordName: name)))
            }
        }
        return Wire.json(.object(["records": .array(items)]))
    }

    func query(_ context: DatabaseRoutes.Context) async throws -> HTTPResponse {
        let body = context.body
        let zoneName = try Wire.zoneName(body)
        let schema = try await schemas.schema(container: context.session.container, environment: context.session.environment)
        let query = try RecordQuery.parse(body, schema: schema.recordTypes, limits: limits)
        if schema.recordTypes[query.recordType] == nil, context.session.environment == .production {
            throw SyncError(.badRequest, "Record type \(query.recordType) is not deployed to production.")
        }
        let page = try await records.queryRecords(context.session, zoneName: zoneName, query: query)
        var object: JSONObject = ["records": .array(page.records.map { context.render($0, desiredKeys: query.desiredKeys, assets: assets) })]
        if let marker = page.continuationMarker { object["continuationMarker"] = .string(marker) }
        return Wire.json(.object(object))
    }

    func changes(_ context: DatabaseRoutes.Context) async throws -> HTTPResponse? {
        let body = context.body
        let zoneName = try Wire.zoneName(body, required: true)
        let token = try Wire.syncToken(body)
        let limit = try RecordQuery.resultsLimit(body["resultsLimit"], limits: limits)
        let wait = try Wire.waitSeconds(body, limits: limits)
        var desiredKeys: Set<String>?
        if let keys = body["desiredKeys"], !keys.isNull {
            guard let parsed = RecordOperation.parseDesiredKeys(keys) else { throw SyncError(.badRequest, "desiredKeys must be an array of field names.") }
            desiredKeys = parsed
        }
        var types: Set<String>?
        if let value = body["desiredRecordTypes"], !value.isNull {
            guard let parsed = RecordOperation.parseDesiredKeys(value), parsed.allSatisfy(Names.isValidRecordType) else {
                throw SyncError(.badRequest, "desiredRecordTypes must be an array of record type names.")
            }
            types = parsed
        }
        let records = records, session = context.session, keys = desiredKeys, recordTypes = types, renderer = context.renderer(assets: assets)
        let unverifiedDigest = context.sessionIsVerified ? nil : context.tokenDigest
        // Without desiredKeys most records go out as the store wrote them from their rows.
        let renderingWireJSON = keys == nil
        @Sendable func answer(_ changes: RecordChanges) -> [UInt8] {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(256 + changes.changes.reduce(0) { size, change in
                if case .wireJSON(let json) = change { size + json.count + 1 } else { size + 400 }
            })
            bytes.append(contentsOf: #"{"zoneID":"#.utf8)
            Wire.zoneID(zoneName).write(to: &bytes)
            bytes.append(contentsOf: #","records":["#.utf8)
            for (index, change) in changes.changes.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                switch change {
                case .wireJSON(let json):
                    bytes.append(contentsOf: json)
                case .record(let record) where record.deleted:
                    record.tombstoneJSON.write(to: &bytes)
                case .record(let record):
                    renderer.render(record, desiredKeys: keys).write(to: &bytes)
                }
            }
            bytes.append(contentsOf: #"],"syncToken":"#.utf8)
            JSONValue.string(changes.token).write(to: &bytes)
            bytes.append(contentsOf: changes.moreComing ? #","moreComing":true}"#.utf8 : #","moreComing":false}"#.utf8)
            return bytes
        }
        let first = try await records.recordChanges(session, zoneName: zoneName, token: token, limit: limit, desiredRecordTypes: types,
                                                  renderingWireJSON: renderingWireJSON, unverifiedTokenDigest: unverifiedDigest)
        if !first.changes.isEmpty || wait == 0 {
            return HTTPResponse(status: .ok, contentType: "application/json; charset=utf-8", body: answer(first))
        }
        // Nothing newer than the token: park until a change of this zone commits or the wait ends.
        // The empty answer repeats the request's token exactly (the zone's token without one).
        let empty = JSONValue.object(["zoneID": Wire.zoneID(zoneName), "records": .array([]),
                                      "syncToken": .string(token ?? first.token), "moreComing": .bool(false)])
        let zoneID = first.zone.id, seen = first.zone.changeSequence
        let poll = LongPoll(writer: context.answering.writer, hub: hub, emptyAnswer: empty.serialized(), onFinish: context.answering.answered,
                            isRelevant: { event in
                                (event.kind == .records && event.zoneID == zoneID && event.sequence > seen) || event.kind == .zones
                            },
                            reread: {
                                let changes = try await records.recordChanges(session, zoneName: zoneName, token: token, limit: limit,
                                                                            desiredRecordTypes: recordTypes, renderingWireJSON: renderingWireJSON, unverifiedTokenDigest: unverifiedDigest)
                                return changes.changes.isEmpty ? nil : answer(changes)
                            })
        try poll.start(databaseID: session.databaseID, deviceKey: "\(session.userID)/\(session.deviceID)", wait: wait,
                       heartbeatSeconds: limits.heartbeatSeconds)
        return nil
    }
}
