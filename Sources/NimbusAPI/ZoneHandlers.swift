import Foundation
import NimbusCore
import NimbusSupport
import NimbusHTTP
import NimbusStore

/// `zones/list`, `zones/lookup`, `zones/modify`, `zones/changes`, and `users/current`.
struct ZoneHandlers: Sendable {
    let zones: ZoneStore
    let hub: ChangeHub
    let liveTokens: LiveTokens
    let limits: Limits

    func list(_ context: DatabaseRoutes.Context) async throws -> HTTPResponse {
        let zones = try await zones.on(context.execution).listZones(context.session)
        return Wire.json(.object(["zones": .array(zones.map { zoneJSON($0, context.session) })]))
    }

    func lookup(_ context: DatabaseRoutes.Context, _ request: LookupZonesRequest) async throws -> HTTPResponse {
        let names = request.names
        let found = try await zones.on(context.execution).lookupZones(context.session, names: names.filter(Names.isValidZoneName))
        let items: [JSONValue] = names.map { name in
            if let zone = found[name] { return zoneJSON(zone, context.session) }
            return Wire.item(ItemError(.zoneNotFound, "Zone \(Names.quoted(name)) does not exist."), extra: ["zoneID": Wire.zoneID(name)])
        }
        return Wire.json(.object(["zones": .array(items)]))
    }

    func modify(_ context: DatabaseRoutes.Context, _ request: ModifyZonesRequest) async throws -> HTTPResponse {
        var results = try await zones.on(context.execution).modifyZones(context.session, operations: request.operations).makeIterator()
        let items: [JSONValue] = request.entries.map { entry in
            switch entry {
            case .refused(let name, let error):
                return Wire.item(error, extra: ["zoneID": Wire.zoneID(name)])
            case .run(let operation):
                switch results.next() {
                case .zone(let zone)?: return zoneJSON(zone, context.session)
                case .deleted(let name)?: return .object(["zoneID": Wire.zoneID(name), "deleted": .bool(true)])
                case .failed(let name, let error)?: return Wire.item(error, extra: ["zoneID": Wire.zoneID(name)])
                case nil: return Wire.item(ItemError(.internalError, "No result."), extra: ["zoneID": Wire.zoneID(operation.zoneName)])
                }
            }
        }
        return Wire.json(.object(["zones": .array(items)]))
    }

    func changes(_ context: DatabaseRoutes.Context, _ request: ZoneChangesRequest) async throws -> HTTPResponse? {
        let token = request.syncToken, limit = request.resultsLimit, wait = request.wait
        let zones = zones, session = context.session
        @Sendable func answer(_ changes: ZoneChanges) -> JSONValue {
            let zones: [JSONValue] = changes.zones.map { zone in
                if zone.deleted { return .object(["zoneID": Wire.zoneID(zone.name), "deleted": .bool(true)]) }
                return .object(["zoneID": Wire.zoneID(zone.name), "syncToken": .string(zones.currentToken(zone, session: session))])
            }
            return .object(["zones": .array(zones), "syncToken": .string(changes.token), "moreComing": .bool(changes.moreComing)])
        }
        let first = try await zones.on(context.execution).zoneChanges(session, token: token, limit: limit)
        if !first.zones.isEmpty || wait == 0 {
            return Wire.json(answer(first))
        }
        let empty = JSONValue.object(["zones": .array([]), "syncToken": .string(token ?? first.token), "moreComing": .bool(false)])
        let poll = LongPoll(writer: context.answering.writer, hub: hub, tokenID: session.tokenID, liveTokens: liveTokens,
                            emptyAnswer: empty.serialized(), onFinish: context.answering.answered,
                            isRelevant: { $0.kind == .records || $0.kind == .zones },
                            reread: { _ in
                                // On the wake's task (not the request's loop): `zones` runs `.offloaded`.
                                let changes = try await zones.zoneChanges(session, token: token, limit: limit)
                                return changes.zones.isEmpty ? nil : answer(changes).serialized()
                            })
        try poll.start(databaseID: session.databaseID, deviceKey: "\(session.userID)/\(session.deviceID)", wait: wait,
                       heartbeatSeconds: limits.heartbeatSeconds)
        return nil
    }

    func currentUser(_ context: DatabaseRoutes.Context) async throws -> HTTPResponse {
        Wire.json(.object(["userRecordName": .string(context.session.userRecordName)]))
    }

    private func zoneJSON(_ zone: ZoneInfo, _ session: Session) -> JSONValue {
        .object(["zoneID": Wire.zoneID(zone.name), "syncToken": .string(zones.currentToken(zone, session: session))])
    }
}
