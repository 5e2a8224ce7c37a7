import Foundation

/// A user's private database in one container and environment: every `records/…` operation of
/// docs/api.md as an `async throws` method. Per-item results come back in request order; requests
/// larger than the server's `/limits` are split.
public struct Database: Sendable {
    public let container: Container
    var transport: Transport { container.transport }

    init(container: Container) { self.container = container }

    func url(_ operation: String) -> URL {
        let c = container
        let path = "/database/1/\(Database.escape(c.identifier))/\(c.configuration.environment.rawValue)/private/\(operation)"
        return transport.url(path)
    }

    static func escape(_ segment: String) -> String {
        segment.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? segment
    }

    // MARK: - Modify

    /// Saves one record (creating it, or updating its changed fields) and returns the server's copy.
    public func save(_ record: Record) async throws -> Record {
        let results = try await modify([.save(record)])
        guard case .saved(let saved) = try results[0].get() else { throw JSON.bad("A save was answered as a delete") }
        return saved
    }

    /// Deletes one record whatever its change tag; deleting a missing record succeeds.
    public func delete(_ id: RecordID) async throws {
        _ = try await modify([.delete(id)])[0].get()
    }

    /// `records/modify`. Assets with a local file are uploaded first. Non-atomic requests larger
    /// than the server's limits are sent in several requests; an atomic one must fit in one.
    /// An operation whose own input fails (a missing asset file, a record larger than a request
    /// may be) is answered as an item failure and the others are sent; a failure of a request
    /// itself (no answer, 5xx, 408, 429) throws.
    public func modify(_ operations: [RecordOperation], atomic: Bool = false, desiredKeys: [String]? = nil)
        async throws -> [Result<RecordResult, NimbusError>] {
        guard !operations.isEmpty else { return [] }
        let limits = try await container.limits()
        let prepared = try await uploadAssets(sealing: operations, limits: limits)
        if atomic, let refused = prepared.refused.sorted(by: { $0.key < $1.key }).first {
            throw refused.value  // all or nothing: one refused change refuses the request
        }
        // What goes on the wire: the operations not refused, in order (`positions` maps back).
        let positions = operations.indices.filter { prepared.refused[$0] == nil }
        let wire = positions.map { prepared.operations[$0] }
        var answers = [Result<RecordResult, NimbusError>?](repeating: nil, count: wire.count)
        // A request addresses one zone: runs of operations on one zone, each split at the limits.
        var requests: [(range: Range<Int>, body: Data)] = []
        var start = 0
        while start < wire.count {
            let zone = wire[start].recordID.zoneID
            var end = start
            while end < wire.count && wire[end].recordID.zoneID == zone { end += 1 }
            let split = try Database.modifyBodies(wire, start..<end, zone: zone, atomic: atomic, desiredKeys: desiredKeys, limits: limits)
            requests += split.bodies
            for (index, error) in split.oversized { answers[index] = .failure(error) }
            start = end
        }
        if atomic && (requests.count > 1 || answers.contains(where: { $0 != nil })) {
            throw NimbusError(.limitExceeded, reason: "An atomic request of \(operations.count) operations must address one zone and fit "
                + "the server's limits (\(limits.maxOperationsPerRequest) operations, \(limits.maxRequestBytes) bytes): send fewer.")
        }
        let ids = wire.map(\.recordID)
        for request in requests {
            let results = try await sendModify(request.body, wire: wire, request.range, ids: ids, atomic: atomic,
                                               desiredKeys: desiredKeys, limits: limits)
            for (index, result) in zip(request.range, results) { answers[index] = result }
        }
        var results = operations.indices.map { index -> Result<RecordResult, NimbusError> in
            .failure(prepared.refused[index] ?? JSON.bad("No answer for operation \(index)"))
        }
        for (wireIndex, position) in positions.enumerated() {
            if let answer = answers[wireIndex] { results[position] = answer }
        }
        return results.map(container.openResult)
    }

    /// One `records/modify` request; a request-level LIMIT_EXCEEDED splits it in two.
    private func sendModify(_ body: Data, wire: [RecordOperation], _ range: Range<Int>, ids: [RecordID], atomic: Bool,
                            desiredKeys: [String]?, limits: ServerLimits) async throws -> [Result<RecordResult, NimbusError>] {
        let zone = ids[range.lowerBound].zoneID
        let answer: JSONObject
        do {
            answer = try await transport.post(url("records/modify"), bodyData: body, zoneID: zone,
                                              limit: .records(range.count, limits, "a records/modify answer"))
        } catch let error as NimbusError where error.code == .limitExceeded && range.count > 1 && !atomic {
            let middle = range.lowerBound + range.count / 2
            var results: [Result<RecordResult, NimbusError>] = []
            for half in [range.lowerBound..<middle, middle..<range.upperBound] {
                let halfBody = try Database.modifyBody(wire[half], zone: zone, atomic: false, desiredKeys: desiredKeys)
                results += try await sendModify(halfBody, wire: wire, half, ids: ids, atomic: false, desiredKeys: desiredKeys, limits: limits)
            }
            return results
        }
        guard let items = JSON.array(answer["records"]), items.count == range.count else {
            throw JSON.bad("records/modify answered \(JSON.array(answer["records"])?.count ?? 0) items for \(range.count) operations")
        }
        return zip(items, ids[range]).map { item, id in Database.recordResult(item, id: id) }
    }

    static func modifyBody(_ operations: ArraySlice<RecordOperation>, zone: ZoneID, atomic: Bool, desiredKeys: [String]?) throws -> Data {
        var json = JSONBytes(capacity: 256 * operations.count + 128)
        json.raw("{\"zoneID\":{\"zoneName\":")
        json.string(zone.zoneName)
        json.raw("},\"operations\":[")
        for (index, operation) in operations.enumerated() {
            if index > 0 { json.byte(UInt8(ascii: ",")) }
            try operation.write(to: &json)
        }
        json.byte(UInt8(ascii: "]"))
        if atomic { json.raw(",\"atomic\":true") }
        if let desiredKeys {
            json.raw(",\"desiredKeys\":[")
            for (index, key) in desiredKeys.enumerated() {
                if index > 0 { json.byte(UInt8(ascii: ",")) }
                json.string(key)
            }
            json.byte(UInt8(ascii: "]"))
        }
        json.byte(UInt8(ascii: "}"))
        return json.data
    }

    /// The request bodies for the operations in `range`: at most the server's operation count
    /// each, halved until a body fits its byte limit (each body encoded once in the common case).
    /// One operation whose body alone is over the limit is not sent: it is `oversized`, with the
    /// error it fails with.
    static func modifyBodies(_ wire: [RecordOperation], _ range: Range<Int>, zone: ZoneID, atomic: Bool, desiredKeys: [String]?,
                             limits: ServerLimits) throws -> (bodies: [(range: Range<Int>, body: Data)], oversized: [(Int, NimbusError)]) {
        var bodies: [(range: Range<Int>, body: Data)] = []
        var oversized: [(Int, NimbusError)] = []
        var pending = stride(from: range.lowerBound, to: range.upperBound, by: limits.maxOperationsPerRequest).map {
            $0..<min(range.upperBound, $0 + limits.maxOperationsPerRequest)
        }.reversed() as [Range<Int>]
        while let next = pending.popLast() {
            let body = try modifyBody(wire[next], zone: zone, atomic: atomic, desiredKeys: desiredKeys)
            if body.count <= limits.maxRequestBytes {
                bodies.append((next, body))
            } else if next.count == 1 {
                let name = wire[next.lowerBound].recordID.recordName
                oversized.append((next.lowerBound, NimbusError(.limitExceeded, reason: "Record \(name) encodes to \(body.count) bytes; a request "
                    + "may have at most \(limits.maxRequestBytes) (maxRequestBytes): move large values into assets.", itemName: name)))
            } else {
                let middle = next.lowerBound + next.count / 2
                pending.append(middle..<next.upperBound)
                pending.append(next.lowerBound..<middle)
            }
        }
        return (bodies, oversized)
    }

    static func recordResult(_ item: JSONValue, id: RecordID) -> Result<RecordResult, NimbusError> {
        guard let object = JSON.object(item) else { return .failure(JSON.bad("An answer item is not an object")) }
        if object["serverErrorCode"] != nil {
            var error = NimbusError.fromWire(object, status: 200, zoneID: id.zoneID)
            if error.itemName == nil { error.itemName = id.recordName }
            return .failure(error)
        }
        do {
            guard let record = try Record.fromWire(object, zoneID: id.zoneID) else {
                return .success(.deleted(id))
            }
            return .success(.saved(record))
        } catch let error as NimbusError {
            return .failure(error)
        } catch {
            return .failure(JSON.bad("\(error)"))
        }
    }

    // MARK: - Lookup, query

    /// `records/lookup`: one result per id, in order; a missing record is `unknownItem`.
    public func lookup(_ ids: [RecordID], desiredKeys: [String]? = nil) async throws -> [Result<Record, NimbusError>] {
        guard !ids.isEmpty else { return [] }
        let limits = try await container.limits()
        var results: [Result<Record, NimbusError>] = []
        // Records of one request share a zone: group by zone, keep the order of the answer.
        var index = 0
        while index < ids.count {
            let zone = ids[index].zoneID
            var end = index
            while end < ids.count && ids[end].zoneID == zone && end - index < limits.maxOperationsPerRequest { end += 1 }
            let slice = ids[index..<end]
            var body: JSONObject = ["zoneID": JSON.zoneID(zone), "records": .array(slice.map { ["recordName": .string($0.recordName)] })]
            if let desiredKeys { body["desiredKeys"] = JSON.strings(desiredKeys) }
            let answer = try await transport.post(url("records/lookup"), body: body, zoneID: zone,
                                                  limit: .records(slice.count, limits, "a records/lookup answer"))
            guard let items = JSON.array(answer["records"]), items.count == slice.count else {
                throw JSON.bad("records/lookup answered another number of records than asked for")
            }
            for (item, id) in zip(items, slice) {
                results.append(container.openResult(Database.recordResult(item, id: id)).flatMap { result in
                    if case .saved(let record) = result { return .success(record) }
                    return .failure(NimbusError(.unknownItem, reason: "Record \(id) is deleted.", itemName: id.recordName))
                })
            }
            index = end
        }
        return results
    }

    /// Fetches one record; `unknownItem` when it does not exist.
    public func record(for id: RecordID, desiredKeys: [String]? = nil) async throws -> Record {
        try await lookup([id], desiredKeys: desiredKeys)[0].get()
    }

    /// One page of `records/query`. Pass the page's `continuation` back for the next one.
    public func query(_ query: Query, in zone: ZoneID = .default, resultsLimit: Int? = nil, desiredKeys: [String]? = nil,
                      continuation: QueryCursor? = nil) async throws -> QueryPage {
        var body: JSONObject = ["zoneID": JSON.zoneID(zone), "query": .object(query.wireQuery())]
        if let resultsLimit { body["resultsLimit"] = .integer(Int64(resultsLimit)) }
        if let desiredKeys { body["desiredKeys"] = JSON.strings(desiredKeys) }
        if let continuation { body["continuationMarker"] = .string(continuation.marker) }
        let answer = try await transport.post(url("records/query"), body: body, zoneID: zone,
                                              limit: await pageLimit(resultsLimit, "a records/query page"))
        let records = try (JSON.array(answer["records"]) ?? []).compactMap { item -> Record? in
            guard let object = JSON.object(item) else { throw JSON.bad("A query result is not an object") }
            return try Record.fromWire(object, zoneID: zone).map(container.open)
        }
        let cursor = JSON.string(answer["continuationMarker"]).map { QueryCursor(marker: $0, query: query, zoneID: zone) }
        return QueryPage(records: records, continuation: cursor)
    }
}

/// A page of query results.
public struct QueryPage: Sendable {
    public var records: [Record]
    /// Where the next page starts; nil on the last page.
    public var continuation: QueryCursor?
}

/// A continuation marker of a query, with the query it continues.
public struct QueryCursor: Sendable, Hashable {
    public var marker: String
    public var query: Query
    public var zoneID: ZoneID

    /// A cursor restored from an archive (NimbusKitCK's `CKQueryOperation.Cursor`).
    package init(marker: String, query: Query, zoneID: ZoneID) {
        self.marker = marker
        self.query = query
        self.zoneID = zoneID
    }
}
