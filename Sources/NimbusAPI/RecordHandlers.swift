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

    /// What writing this request's records needs (download URLs).
    func renderer(_ context: DatabaseRoutes.Context) -> DatabaseRoutes.RecordRenderer {
        context.renderer(assets: assets)
    }

    func modify(_ context: DatabaseRoutes.Context, _ request: ModifyRecordsRequest) async throws -> RecordsAnswer {
        let results = try await records.on(context.execution).modifyRecords(context.session, zoneName: request.zoneName, operations: request.operations,
                                                    atomic: request.atomic, limits: limits, proof: context.proof)
        return RecordsAnswer(records: .results(results, desiredKeysByName: request.desiredKeysByName))
    }

    func lookup(_ context: DatabaseRoutes.Context, _ request: LookupRecordsRequest) async throws -> RecordsAnswer {
        // Without desiredKeys most records go out as the store wrote them from their rows.
        let found = try await records.on(context.execution).lookupRecords(context.session, zoneName: request.zoneName, names: request.validNames,
                                                   renderingWireJSON: request.desiredKeys == nil)
        return RecordsAnswer(records: .found(found, names: request.names), desiredKeys: request.desiredKeys)
    }

    func query(_ context: DatabaseRoutes.Context, _ request: QueryRecordsRequest) async throws -> RecordsAnswer {
        let schema = try await schemas.on(context.execution).schema(container: context.session.container, environment: context.session.environment)
        let query = try request.query(schema: schema.recordTypes)
        if schema.recordTypes[query.recordType] == nil, context.session.environment == .production {
            let development = try await schemas.on(context.execution).schema(container: context.session.container, environment: .development)
            throw SyncError(.badRequest, SchemaAdvice.missingRecordType(query.recordType, container: context.session.container,
                                                                        production: schema, development: development))
        }
        let page = try await records.on(context.execution).queryRecords(context.session, zoneName: request.zoneName, query: query,
                                                  renderingWireJSON: query.desiredKeys == nil)
        return RecordsAnswer(records: .read(page.changes), desiredKeys: query.desiredKeys,
                             shape: .query(continuationMarker: page.continuationMarker))
    }

    /// nil when the request parked (its answer goes out through `context.answering`).
    func changes(_ context: DatabaseRoutes.Context, _ request: RecordChangesRequest) async throws -> RecordsAnswer? {
        let zoneName = request.zoneName, token = request.syncToken, limit = request.resultsLimit, wait = request.wait
        let records = records, session = context.session, keys = request.desiredKeys, recordTypes = request.desiredRecordTypes, renderer = renderer(context)
        let proof = context.proof
        // Without desiredKeys most records go out as the store wrote them from their rows.
        let renderingWireJSON = keys == nil
        @Sendable func answer(_ changes: RecordChanges) -> RecordsAnswer {
            RecordsAnswer(records: .read(changes.changes), desiredKeys: keys,
                          shape: .changes(zoneName: zoneName, syncToken: changes.token, moreComing: changes.moreComing))
        }
        let first = try await records.on(context.execution).recordChanges(session, zoneName: zoneName, token: token, limit: limit, desiredRecordTypes: recordTypes,
                                                  renderingWireJSON: renderingWireJSON, proof: proof)
        if !first.changes.isEmpty || wait == 0 {
            return answer(first)
        }
        // Nothing newer than the token: park until a change of this zone commits or the wait ends.
        // The empty answer repeats the request's token exactly (the zone's token without one).
        let empty = RecordsAnswer(records: .read([]), shape: .changes(zoneName: zoneName, syncToken: token ?? first.token, moreComing: false))
            .bytes(renderer: renderer)
        let zoneID = first.zone.id, seen = first.zone.changeSequence
        // Everything the answer's bytes depend on; a token not yet verified is checked by the read
        // itself, so only requests with that token share it.
        let shareKey = [String(session.databaseID), String(zoneID), token ?? "", String(limit),
                        recordTypes.map { $0.sorted().joined(separator: ",") } ?? "*", keys.map { $0.sorted().joined(separator: ",") } ?? "*",
                        context.baseURL, proof.uncheckedTokenDigest.map { Base64URL.encode($0) } ?? ""].joined(separator: "\u{1}")
        let poll = LongPoll(writer: context.answering.writer, hub: hub, tokenID: session.tokenID, liveTokens: liveTokens,
                            emptyAnswer: empty, onFinish: context.answering.answered,
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
                                    return changes.changes.isEmpty ? nil : answer(changes).bytes(renderer: renderer)
                                }
                            })
        try poll.start(databaseID: session.databaseID, deviceKey: "\(session.userID)/\(session.deviceID)", wait: wait,
                       heartbeatSeconds: limits.heartbeatSeconds)
        return nil
    }
}
