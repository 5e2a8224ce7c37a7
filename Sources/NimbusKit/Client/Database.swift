import Foundation

/// A user's private database in one container and environment: every `records/…` operation of
/// API.md as an `async throws` method. Per-item results come back in request order; requests
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
    public func modify(_ operations: [RecordOperation], atomic: Bool = false, desiredKeys: [String]? = nil)
        async throws -> [Result<RecordResult, NimbusError>] {
        guard !operations.isEmpty else { return [] }
        let prepared = try await uploadAssets(of: operations)
        let limits = try await container.limits()
        let wire = prepared.map { $0.wireOperation() }
        // A request addresses one zone: runs of operations on one zone, each split at the limits.
        var batches: [Range<Int>] = []
        var start = 0
        while start < prepared.count {
            let zone = prepared[start].recordID.zoneID
            var end = start
            while end < prepared.count && prepared[end].recordID.zoneID == zone { end += 1 }
            batches += try Database.batches(of: Array(wire[start..<end]), limits: limits).map { ($0.lowerBound + start)..<($0.upperBound + start) }
            start = end
        }
        if atomic && batches.count > 1 {
            throw NimbusError(.limitExceeded, reason: "An atomic request of \(operations.count) operations must address one zone and fit "
                + "the server's limits (\(limits.maxOperationsPerRequest) operations, \(limits.maxRequestBytes) bytes): send fewer.")
        }
        var results: [Result<RecordResult, NimbusError>] = []
        results.reserveCapacity(operations.count)
        for range in batches {
            results += try await sendModify(Array(wire[range]), ids: prepared[range].map(\.recordID), atomic: atomic,
                                            desiredKeys: desiredKeys)
        }
        return results
    }

    /// One `records/modify` request; a request-level LIMIT_EXCEEDED splits it in two.
    private func sendModify(_ wire: [JSONObject], ids: [RecordID], atomic: Bool, desiredKeys: [String]?)
        async throws -> [Result<RecordResult, NimbusError>] {
        let zone = ids.first?.zoneID ?? .default
        var body: JSONObject = ["zoneID": ["zoneName": zone.zoneName], "operations": wire]
        if atomic { body["atomic"] = true }
        if let desiredKeys { body["desiredKeys"] = desiredKeys }
        let answer: JSONObject
        do {
            answer = try await transport.post(url("records/modify"), body: body, zoneID: zone)
        } catch let error as NimbusError where error.code == .limitExceeded && wire.count > 1 && !atomic {
            let half = wire.count / 2
            let first = try await sendModify(Array(wire[..<half]), ids: Array(ids[..<half]), atomic: false, desiredKeys: desiredKeys)
            let second = try await sendModify(Array(wire[half...]), ids: Array(ids[half...]), atomic: false, desiredKeys: desiredKeys)
            return first + second
        }
        guard let items = JSON.array(answer["records"]), items.count == ids.count else {
            throw JSON.bad("records/modify answered \(JSON.array(answer["records"])?.count ?? 0) items for \(ids.count) operations")
        }
        return zip(items, ids).map { item, id in Database.recordResult(item, id: id) }
    }

    static func recordResult(_ item: Any, id: RecordID) -> Result<RecordResult, NimbusError> {
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

    /// Splits wire operations at the server's operation count and request size.
    static func batches(of wire: [JSONObject], limits: ServerLimits) throws -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var start = 0
        var bytes = 64
        let budget = limits.maxRequestBytes - 1024
        for (index, operation) in wire.enumerated() {
            let size = (try? JSON.encode(operation).count) ?? 0
            let full = index - start >= limits.maxOperationsPerRequest || (bytes + size > budget && index > start)
            if full {
                ranges.append(start..<index)
                start = index
                bytes = 64
            }
            bytes += size + 1
        }
        ranges.append(start..<wire.count)
        return ranges
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
            var body: JSONObject = ["zoneID": ["zoneName": zone.zoneName],
                                    "records": slice.map { ["recordName": $0.recordName] as JSONObject }]
            if let desiredKeys { body["desiredKeys"] = desiredKeys }
            let answer = try await transport.post(url("records/lookup"), body: body, zoneID: zone)
            guard let items = JSON.array(answer["records"]), items.count == slice.count else {
                throw JSON.bad("records/lookup answered another number of records than asked for")
            }
            for (item, id) in zip(items, slice) {
                results.append(Database.recordResult(item, id: id).flatMap { result in
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
        var body: JSONObject = ["zoneID": ["zoneName": zone.zoneName], "query": query.wireQuery()]
        if let resultsLimit { body["resultsLimit"] = resultsLimit }
        if let desiredKeys { body["desiredKeys"] = desiredKeys }
        if let continuation { body["continuationMarker"] = continuation.marker }
        let answer = try await transport.post(url("records/query"), body: body, zoneID: zone)
        let records = try (JSON.array(answer["records"]) ?? []).compactMap { item -> Record? in
            guard let object = JSON.object(item) else { throw JSON.bad("A query result is not an object") }
            return try Record.fromWire(object, zoneID: zone)
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
}
