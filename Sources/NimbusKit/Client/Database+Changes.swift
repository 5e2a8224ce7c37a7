import Foundation

/// An opaque change token of a zone (`records/changes`) or of the database (`zones/changes`).
public struct SyncToken: Hashable, Sendable, Codable, CustomStringConvertible {
    public var value: String
    public init(_ value: String) { self.value = value }
    public var description: String { value }
}

/// One answer of `records/changes`.
public struct ZoneChanges: Sendable {
    public var zoneID: ZoneID
    /// Records created or changed, each in its latest state.
    public var modified: [Record]
    /// Records deleted (tombstones), with their type when the server gave it.
    public var deleted: [(id: RecordID, recordType: String?)]
    /// The token to ask from next time; it advances past what was returned.
    public var syncToken: SyncToken
    public var moreComing: Bool
    /// Changed records whose encrypted values did not open on this device (`encryptionKeyMissing`,
    /// `decryptionFailed`): never in `modified`, never as garbage.
    public var unreadable: [UnreadableRecord] = []
    /// How many sealed values `modified` holds, as the changes decoder counted them (nil: not
    /// counted); a page with none and no declared encrypted assets needs no opening.
    var sealedValues: Int?
}

/// One answer of `zones/changes`.
public struct DatabaseChanges: Sendable {
    public var changedZones: [ZoneID]
    public var deletedZones: [ZoneID]
    public var syncToken: SyncToken
    public var moreComing: Bool
}

extension Database {
    /// One page of `records/changes`. With `wait` (0–55 s) the server holds the request until a
    /// change commits or the wait ends (then no records and the same token).
    public func changes(in zone: ZoneID, since token: SyncToken?, resultsLimit: Int? = nil, desiredKeys: [String]? = nil,
                        recordTypes: [String]? = nil, wait: Int = 0) async throws -> ZoneChanges {
        var body: JSONObject = ["zoneID": JSON.zoneID(zone)]
        if let token { body["syncToken"] = .string(token.value) }
        if let resultsLimit { body["resultsLimit"] = .integer(Int64(resultsLimit)) }
        if let desiredKeys { body["desiredKeys"] = JSON.strings(desiredKeys) }
        if let recordTypes { body["desiredRecordTypes"] = JSON.strings(recordTypes) }
        if wait > 0 { body["wait"] = .integer(Int64(wait)) }
        // The answer is decoded from its bytes (ChangesPageDecoder), not through JSONSerialization's
        // tree: a first sync's pages of 400 records spent most of their time there.
        var request = transport.request(url("records/changes"), method: "POST", waitSeconds: wait)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = JSON.encode(body)
        let (data, response) = try await transport.send(request, limit: await pageLimit(resultsLimit, "a records/changes page"))
        try Transport.check(response, data: data, zoneID: zone)
        return try await decodeChanges(data, zone: zone)
    }

    /// The bytes of one `records/changes` page (checked: an error answer throws), not yet decoded:
    /// the engine reads the next page's token from them (`ChangesContinuation`) and asks for it
    /// while this one is decoded.
    func changesAnswer(in zone: ZoneID, since token: SyncToken?, resultsLimit: Int?) async throws -> Data {
        var body: JSONObject = ["zoneID": JSON.zoneID(zone)]
        if let token { body["syncToken"] = .string(token.value) }
        if let resultsLimit { body["resultsLimit"] = .integer(Int64(resultsLimit)) }
        // Through `exchange` as an `HTTPRequest`: not `send`'s `URLRequest` and `HTTPURLResponse`,
        // whose header conversions there and back were 4% of a first sync's client CPU.
        let answer = try await transport.exchange(HTTPRequest(
            url: url("records/changes"), method: "POST", headers: ["Content-Type": "application/json"], body: JSON.encode(body),
            timeout: transport.timeout(waitSeconds: 0), limit: await pageLimit(resultsLimit, "a records/changes page")))
        try Transport.check(answer, zoneID: zone)
        return answer.body
    }

    /// A `records/changes` page decoded and its records opened on the decoding thread
    /// (`BackgroundThread.decoding`, below the requests' threads in priority), off the caller's
    /// actor (the engine's stays free for enqueues meanwhile). Sealed values are opened by the
    /// decoder as it meets them (`PageOpening`), not in a second pass.
    func decodeChanges(_ data: Data, zone: ZoneID) async throws -> ZoneChanges {
        let container = container
        return try await BackgroundThread.decoding.run {
            try ChangesPageDecoder.decode(data, zone: zone, opening: PageOpening(container))
        }
    }

    /// The answer limit of a page of records: `resultsLimit` capped at the server's
    /// `maxResultsLimit`, as the server caps it. Without the server's limits (GET /limits failed)
    /// the defaults of docs/api.md.
    func pageLimit(_ resultsLimit: Int?, _ what: String) async -> AnswerLimit {
        let limits = (try? await container.limits()) ?? .defaults
        return .records(min(resultsLimit ?? limits.maxResultsLimit, limits.maxResultsLimit), limits, what)
    }

    /// A `records/changes` answer decoded through the JSON tree (NimbusWire's parser): the reference that
    /// `ChangesPageDecoder` is tested against.
    static func zoneChanges(_ answer: JSONObject, zone: ZoneID) throws -> ZoneChanges {
        guard let token = JSON.string(answer["syncToken"]) else { throw JSON.bad("records/changes answered without a syncToken") }
        var modified: [Record] = []
        var deleted: [(id: RecordID, recordType: String?)] = []
        let items = JSON.array(answer["records"]) ?? []
        modified.reserveCapacity(items.count)
        for item in items {
            guard let object = JSON.object(item) else { throw JSON.bad("A change is not an object") }
            if let record = try Record.fromWire(object, zoneID: zone) {
                modified.append(record)
            } else if let name = JSON.string(object["recordName"]) {
                deleted.append((RecordID(recordName: name, zoneID: zone), JSON.string(object["recordType"])))
            }
        }
        return ZoneChanges(zoneID: zone, modified: modified, deleted: deleted, syncToken: SyncToken(token),
                           moreComing: JSON.bool(answer["moreComing"]) ?? false)
    }

    /// One page of `zones/changes`: which zones changed since the database token.
    public func databaseChanges(since token: SyncToken?, resultsLimit: Int? = nil, wait: Int = 0) async throws -> DatabaseChanges {
        var body = JSONObject()
        if let token { body["syncToken"] = .string(token.value) }
        if let resultsLimit { body["resultsLimit"] = .integer(Int64(resultsLimit)) }
        if wait > 0 { body["wait"] = .integer(Int64(wait)) }
        let answer = try await transport.post(url("zones/changes"), body: body, waitSeconds: wait)
        guard let token = JSON.string(answer["syncToken"]) else { throw JSON.bad("zones/changes answered without a syncToken") }
        var changed: [ZoneID] = []
        var deleted: [ZoneID] = []
        for item in JSON.array(answer["zones"]) ?? [] {
            guard let object = JSON.object(item),
                  let name = JSON.string(JSON.object(object["zoneID"])?["zoneName"]) else { throw JSON.bad("A zone change has no zoneID") }
            if JSON.bool(object["deleted"]) == true { deleted.append(ZoneID(name)) } else { changed.append(ZoneID(name)) }
        }
        return DatabaseChanges(changedZones: changed, deletedZones: deleted, syncToken: SyncToken(token),
                               moreComing: JSON.bool(answer["moreComing"]) ?? false)
    }
}
