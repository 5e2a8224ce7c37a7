import Foundation
import NimbusCore
import NimbusHTTP
import NimbusStore

/// `zones/list`, `zones/lookup`, `zones/modify`, `zones/changes`, and `users/current`.
struct ZoneHandlers: Sendable {
    let zones: ZoneStore
    let hub: ChangeHub
    let limits: Limits

    func list(_ context: DatabaseRoutes.Context) async throws -> HTTPResponse {
        let zones = try await zones.listZones(context.session)
        return Wire.json(.object(["zones": .array(zones.map { zoneJSON($0, context.session) })]))
    }

    func lookup(_ context: DatabaseRoutes.Context) async throws -> HTTPResponse {
        guard case .array(let entries)? = context.body["zones"] else {
            throw SyncError(.badRequest, "zones/lookup needs a \"zones\" array of {\"zoneName\"}.")
        }
        guard entries.count <= limits.maxOperationsPerRequest else {
            throw SyncError(.limitExceeded, "The request names \(entries.count) zones; maxOperationsPerRequest is \(limits.maxOperationsPerRequest).")
        }
        let names = try entries.map { entry -> String in
            // Both {"zoneName"} and {"zoneID": {"zoneName"}} are accepted.
            if case .string(let name)? = entry["zoneName"] { return name }
            if case .string(let name)? = entry["zoneID"]?["zoneName"] { return name }
            throw SyncError(.badRequest, "Each element of zones must be {\"zoneName\": \"...\"}.")
        }
        let found = try await zones.lookupZones(context.session, names: names.filter(Names.isValidZoneName))
        let items: [JSONValue] = names.map { name in
            if let zone = found[name] { return zoneJSON(zone, context.session) }
            return Wire.item(ItemError(.zoneNotFound, "Zone \(Names.quoted(name)) does not exist."), extra: ["zoneID": Wire.zoneID(name)])
        }
        return Wire.json(.object(["zones": .array(items)]))
    }

    func modify(_ context: DatabaseRoutes.Context) async throws -> HTTPResponse {
        guard case .array(let entries)? = context.body["operations"] else {
            throw SyncError(.badRequest, "zones/modify needs an \"operations\" array.")
        }
        guard entries.count <= limits.maxOperationsPerRequest else {
            throw SyncError(.limitExceeded, "The request has \(entries.count) operations; maxOperationsPerRequest is \(limits.maxOperationsPerRequest).")
        }
        enum Planned { case run(ZoneOperation), refused(String, ItemError) }
        var planned: [Planned] = []
        for entry in entries {
            let name = entry["zone"]?["zoneID"]?["zoneName"]?.stringValue ?? entry["zone"]?["zoneName"]?.stringValue ?? ""
            func fail(_ reason: String) { planned.append(.refused(name, ItemError(.badRequest, reason))) }
            guard case .string(let kind)? = entry["operationType"], kind == "create" || kind == "delete" else {
                fail("operationType must be create or delete.")
                continue
            }
            guard Names.isValidZoneName(name) else {
                fail("Zone name \(Names.quoted(name)) is invalid: use 1–255 letters, digits, '-', '_', '.', ':'.")
                continue
            }
            if name.hasPrefix("_") && name != Names.defaultZone {
                fail("Zone names starting with '_' are reserved.")
                continue
            }
            if kind == "delete" && name == Names.defaultZone {
                fail("The default zone cannot be deleted.")
                continue
            }
            planned.append(.run(kind == "create" ? .create(name) : .delete(name)))
        }
        let operations = planned.compactMap { entry -> ZoneOperation? in
            if case .run(let operation) = entry { return operation } else { return nil }
        }
        var results = try await zones.modifyZones(context.session, operations: operations).makeIterator()
        let items: [JSONValue] = planned.map { entry in
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

    func changes(_ context: DatabaseRoutes.Context) async throws -> HTTPResponse? {
        let token = try Wire.syncToken(context.body)
        let limit = try RecordQuery.resultsLimit(context.body["resultsLimit"], limits: limits)
        let wait = try Wire.waitSeconds(context.body, limits: limits)
        let zones = zones, session = context.session
        @Sendable func answer(_ changes: ZoneChanges) -> JSONValue {
            let zones: [JSONValue] = changes.zones.map { zone in
                if zone.deleted { return .object(["zoneID": Wire.zoneID(zone.name), "deleted": .bool(true)]) }
                return .object(["zoneID": Wire.zoneID(zone.name), "syncToken": .string(zones.currentToken(zone, session: session))])
            }
            return .object(["zones": .array(zones), "syncToken": .string(changes.token), "moreComing": .bool(changes.moreComing)])
        }
        let first = try await zones.zoneChanges(session, token: token, limit: limit)
        if !first.zones.isEmpty || wait == 0 {
            return Wire.json(answer(first))
        }
        let empty = JSONValue.object(["zones": .array([]), "syncToken": .string(token ?? first.token), "moreComing": .bool(false)])
        let poll = LongPoll(writer: context.answering.writer, hub: hub, emptyAnswer: empty.serialized(), onFinish: context.answering.answered,
                            isRelevant: { $0.kind == .records || $0.kind == .zones },
                            reread: {
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
