import Foundation

/// A zone as `zones/list` shows it.
public struct ZoneInfo: Sendable, Hashable {
    public var zoneID: ZoneID
    /// The zone's current `records/changes` token.
    public var syncToken: SyncToken?
}

extension Database {
    /// `GET zones/list`.
    public func zones() async throws -> [ZoneInfo] {
        let answer = try await transport.get(url("zones/list"))
        return try Database.zoneInfos(answer)
    }

    /// `zones/lookup`: a missing zone is a `zoneNotFound` item.
    public func lookupZones(_ ids: [ZoneID]) async throws -> [Result<ZoneInfo, NimbusError>] {
        let body: JSONObject = ["zones": .array(ids.map(JSON.zoneID))]
        let answer = try await transport.post(url("zones/lookup"), body: body)
        return try zoneResults(answer, ids: ids)
    }

    /// `zones/modify`: creates (an existing zone succeeds) and deletes (with their records).
    public func modifyZones(saving: [ZoneID] = [], deleting: [ZoneID] = []) async throws -> [Result<ZoneInfo, NimbusError>] {
        let operations = saving.map { ("create", $0) } + deleting.map { ("delete", $0) }
        guard !operations.isEmpty else { return [] }
        let body: JSONObject = ["operations": .array(operations.map { kind, zone in
            ["operationType": .string(kind), "zone": ["zoneID": JSON.zoneID(zone)]]
        })]
        let answer = try await transport.post(url("zones/modify"), body: body)
        return try zoneResults(answer, ids: operations.map(\.1))
    }

    /// Creates a zone (succeeds when it exists).
    public func createZone(_ zone: ZoneID) async throws {
        _ = try await modifyZones(saving: [zone])[0].get()
    }

    private func zoneResults(_ answer: JSONObject, ids: [ZoneID]) throws -> [Result<ZoneInfo, NimbusError>] {
        guard let items = JSON.array(answer["zones"]), items.count == ids.count else {
            throw JSON.bad("The zones answer has another number of items than asked for")
        }
        return zip(items, ids).map { item, id in
            guard let object = JSON.object(item) else { return .failure(JSON.bad("A zone item is not an object")) }
            if object["serverErrorCode"] != nil {
                var error = NimbusError.fromWire(object, status: 200, zoneID: id)
                if error.itemName == nil { error.itemName = id.zoneName }
                return .failure(error)
            }
            return .success(ZoneInfo(zoneID: id, syncToken: JSON.string(object["syncToken"]).map(SyncToken.init)))
        }
    }

    static func zoneInfos(_ answer: JSONObject) throws -> [ZoneInfo] {
        try (JSON.array(answer["zones"]) ?? []).map { item in
            guard let object = JSON.object(item), let name = JSON.string(JSON.object(object["zoneID"])?["zoneName"]) else {
                throw JSON.bad("A zone has no zoneID")
            }
            return ZoneInfo(zoneID: ZoneID(name), syncToken: JSON.string(object["syncToken"]).map(SyncToken.init))
        }
    }
}
