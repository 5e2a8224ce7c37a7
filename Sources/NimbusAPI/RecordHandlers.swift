import Foundation
import NimbusCore
import NimbusSupport
import NimbusHTTP
import NimbusStore

/// `records/modify`, `records/lookup`, `records/query`, `records/changes`.
struct RecordHandlers: Sendable {
    let records: RecordStore
    let schemas: SchemaStore
    /// For download URLs in answers.
    let assets: AssetStore
    let hub: ChangeHub
    let liveTokens: LiveTokens
    let limits: Limits

    func modify(_ context: DatabaseRoutes.Context, _ request: ModifyRecordsRequest) async throws -> HTTPResponse {
        let operations = request.operations
        let results = try await records.on(context.execution).modifyRecords(context.session, zoneName: request.zoneName, operations: operations, atomic: request.atomic, limits: limits,
                                                    proof: context.proof)
        let keysByName = request.desiredKeysByName
        // Written straight to bytes; saved records without assets (no download URLs to add) and
        // without desiredKeys skip the JSON tree (the same bytes: RecordTests).
        var answer = JSONPageWriter(capacity: 64 + results.count * 640)
        answer.append(#"{"records":["#)
        for (index, result) in results.enumerated() {
            if index > 0 { answer.append(byte: UInt8(ascii: ",")) }
            let tree: JSONValue
            switch result {
            case .saved(let record, nil) where !record.fields.values.contains(where: { $0.hasAssets }):
                record.writeJSON(to: &answer)
                continue
            case .saved(let record, let keys):
                tree = context.render(record, desiredKeys: keys, assets: assets)
            case .deleted(let name):
                tree = .object(["recordName": .string(name), "deleted": .bool(true)])
            case .failed(let error):
                tree = Wire.item(error, desiredKeys: error.recordName.flatMap { keysByName[$0] ?? nil },
                                 render: { context.render($0, desiredKeys: $1, assets: assets) })
            }
            tree.serialized().withUnsafeBytes { answer.append(raw: $0) }
        }
        answer.append("]}")
        return HTTPResponse(status: .ok, contentType: "application/json; charset=utf-8", body: answer.finish())
    }

    func lookup(_ context: DatabaseRoutes.Context, _ request: LookupRecordsRequest) async throws -> HTTPResponse {
        // Without desiredKeys most records go out as the store wrote them from their rows.
        let found = try await records.on(context.execution).lookupRecords(context.session, zoneName: request.zoneName, names: request.validNames,
                                                   renderingWireJSON: request.desiredKeys == nil)
        var iterator = found.makeIterator()
        var answer = RecordsAnswer()
        for entry in request.names {
            guard case .valid(let name) = entry else {
                if case .invalid(let text) = entry {
                    answer.append(Wire.item(ItemError(.badRequest, "Record name \(Names.quoted(text)) is invalid.", recordName: text)))
                }
                continue
            }
            if let record = iterator.next() ?? nil {
                answer.append(record, desiredKeys: request.desiredKeys, renderer: context.renderer(assets: assets))
            } else {
                answer.append(Wire.item(ItemError(.notFound, "Record \(name) does not exist.", recordName: name)))
            }
        }
        return answer.response()
    }

    func query(_ context: DatabaseRoutes.Context, _ request: QueryRecordsRequest) async throws -> HTTPResponse {
        let schema = try await schemas.on(context.execution).schema(container: context.session.container, environment: context.session.environment)
        let query = try request.query(schema: schema.recordTypes)
        if schema.recordTypes[query.recordType] == nil, context.session.environment == .production {
            let development = try await schemas.on(context.execution).schema(container: context.session.container, environment: .development)
            throw SyncError(.badRequest, SchemaAdvice.missingRecordType(query.recordType, container: context.session.container,
                                                                        production: schema, development: development))
        }
        let page = try await records.on(context.execution).queryRecords(context.session, zoneName: request.zoneName, query: query,
                                                  renderingWireJSON: query.desiredKeys == nil)
        var answer = RecordsAnswer()
        let renderer = context.renderer(assets: assets)
        for record in page.changes {
            answer.append(record, desiredKeys: query.desiredKeys, renderer: renderer)
        }
        return answer.response(continuationMarker: page.continuationMarker)
    }

    func changes(_ context: DatabaseRoutes.Context, _ request: RecordChangesRequest) async throws -> HTTPResponse? {
        let zoneName = request.zoneName, token = request.syncToken, limit = request.resultsLimit, wait = request.wait
        let records = records, session = context.session, keys = request.desiredKeys, recordTypes = request.desiredRecordTypes, renderer = context.renderer(assets: assets)
        let proof = context.proof
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
        let first = try await records.on(context.execution).recordChanges(session, zoneName: zoneName, token: token, limit: limit, desiredRecordTypes: recordTypes,
                                                  renderingWireJSON: renderingWireJSON, proof: proof)
        if !first.changes.isEmpty || wait == 0 {
            return HTTPResponse(status: .ok, contentType: "application/json; charset=utf-8", body: answer(first))
        }
        // Nothing newer than the token: park until a change of this zone commits or the wait ends.
        // The empty answer repeats the request's token exactly (the zone's token without one).
        let empty = JSONValue.object(["zoneID": Wire.zoneID(zoneName), "records": .array([]),
                                      "syncToken": .string(token ?? first.token), "moreComing": .bool(false)])
        let zoneID = first.zone.id, seen = first.zone.changeSequence
        // Everything the answer's bytes depend on; a token not yet verified is checked by the read
        // itself, so only requests with that token share it.
        let shareKey = [String(session.databaseID), String(zoneID), token ?? "", String(limit),
                        recordTypes.map { $0.sorted().joined(separator: ",") } ?? "*", keys.map { $0.sorted().joined(separator: ",") } ?? "*",
                        context.baseURL, proof.uncheckedTokenDigest.map { Base64URL.encode($0) } ?? ""].joined(separator: "\u{1}")
        let poll = LongPoll(writer: context.answering.writer, hub: hub, tokenID: session.tokenID, liveTokens: liveTokens,
                            emptyAnswer: empty.serialized(), onFinish: context.answering.answered,
                            isRelevant: { event in
                                (event.kind == .records && event.zoneID == zoneID && event.sequence > seen) || event.kind == .zones
                            },
                            reread: { [hub] wokenAt in
                                // Waiters woken alike (one zone, one position, one shape of answer) share one read,
                                // on the wake's task (not the request's loop): `records` runs `.offloaded`.
                                try await hub.sharedReads.read(shareKey, notBefore: wokenAt, current: hub.wakeGeneration) {
                                    let changes = try await records.recordChanges(session, zoneName: zoneName, token: token, limit: limit,
                                                                                desiredRecordTypes: recordTypes, renderingWireJSON: renderingWireJSON,
                                                                                proof: proof)
                                    return changes.changes.isEmpty ? nil : answer(changes)
                                }
                            })
        try poll.start(databaseID: session.databaseID, deviceKey: "\(session.userID)/\(session.deviceID)", wait: wait,
                       heartbeatSeconds: limits.heartbeatSeconds)
        return nil
    }
}
