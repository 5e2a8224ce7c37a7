import NimbusSupport

/// A `records/modify` body, read in one pass over its bytes without building the JSON tree
/// (building and freeing it was a third of a 100-record request's CPU), then checked against the
/// request's rules. This is the only reader of the body: every shape a client may send goes
/// through it —
///
///     {"zoneID": {"zoneName": "z"}, "atomic": false, "desiredKeys": ["f"],
///      "operations": [{"operationType": "create", "desiredKeys": [...],
///                      "record": {"recordName": "n", "recordType": "T", "recordChangeTag": "t",
///                                 "zoneID": {"zoneName": "z"},
///                                 "fields": {"f": {"value": ..., "type": "T"}}}}]}
///
/// — and unknown members are skipped. `scan` refuses only a document that is not a JSON object;
/// the caller words that error with the parser (the message every endpoint gives).
package struct ModifyBody: Sendable {
    /// The top-level `zoneID` as sent.
    package var zoneID: JSONValue?
    package var atomic: JSONValue?
    package var desiredKeys: OperationDraft.Member<Set<String>> = .missing
    /// The `operations` elements (nil: absent or not an array); `operationCount` counts them all,
    /// while only the first `maxOperationsPerRequest` are kept.
    package var operations: [OperationDraft]?
    package var operationCount = 0

    /// A body of whitespace only: an empty object.
    package init() {}

    /// The decoded request.
    package struct Request: Sendable {
        package var zoneName: String
        /// In request order; an operation that breaks a rule fails alone (unless `atomic`).
        package var operations: [Result<RecordOperation, ItemError>]
        package var atomic: Bool
    }

    /// Reads `bytes`; nil when they are not one JSON object.
    package static func scan(_ bytes: [UInt8], limits: Limits, parseLimits: JSONValue.ParseLimits = .init()) -> ModifyBody? {
        JSONScanner.scan(bytes, limits: parseLimits) { scanner in
            var body = ModifyBody()
            var seen = SeenKeys()
            var first = true
            try scanner.beginObject()
            while let key = try scanner.nextMember(first: &first, among: Self.keys) {
                switch try seen.first(key) {
                case 0?: body.zoneID = try scanner.value()
                case 1?: body.atomic = try scanner.value()
                case 2?: try body.readOperations(&scanner, keeping: limits.maxOperationsPerRequest)
                case 3?: body.desiredKeys = try OperationDraft.keysMember(&scanner)
                default: _ = try scanner.value()
                }
            }
            return body
        }
    }

    private static let keys: [StaticString] = ["zoneID", "atomic", "operations", "desiredKeys"]

    private mutating func readOperations(_ scanner: inout JSONScanner, keeping maximum: Int) throws {
        guard scanner.peek() == UInt8(ascii: "[") else {
            _ = try scanner.value()
            return
        }
        var drafts: [OperationDraft] = []
        var first = true
        try scanner.beginArray()
        while try scanner.nextElement(first: &first) {
            operationCount += 1
            if operationCount <= maximum {
                drafts.append(try OperationDraft.read(&scanner))
            } else {
                _ = try scanner.value()     // refused by count: read only to find the end
            }
        }
        operations = drafts
    }

    /// The request, or the error that refuses it whole, in this order: the zone, the operations
    /// array and its size, `atomic`, `desiredKeys`, then each operation (its own problems fail
    /// it alone; a record named twice refuses the request). `newName`: a create sent without a
    /// recordName gets one.
    package func request(limits: Limits, newName: () -> String) throws(SyncError) -> Request {
        let zoneName = try Names.zoneName(ofZoneID: zoneID)
        guard let drafts = operations else { throw SyncError(.badRequest, "records/modify needs an \"operations\" array.") }
        try limits.checkCount(operationCount, of: "operations", verb: "has")
        var isAtomic = false
        if let atomic, !atomic.isNull {
            guard case .bool(let flag) = atomic else { throw SyncError(.badRequest, "atomic must be true or false.") }
            isAtomic = flag
        }
        var sharedKeys: Set<String>?
        switch desiredKeys {
        case .value(let keys): sharedKeys = keys
        case .otherKind: throw SyncError(.badRequest, "desiredKeys must be an array of field names.")
        case .missing: break
        }
        var results: [Result<RecordOperation, ItemError>] = []
        results.reserveCapacity(drafts.count)
        var names = Set<String>()
        names.reserveCapacity(drafts.count)
        for draft in drafts {
            var parsed = draft.validated(zone: zoneName)
            if case .success(var operation) = parsed {
                if operation.recordName.isEmpty { operation.recordName = newName() }
                if operation.desiredKeys == nil { operation.desiredKeys = sharedKeys }
                guard names.insert(operation.recordName).inserted else {
                    throw SyncError(.badRequest, "Record \(operation.recordName) appears in more than one operation; send one operation per record.")
                }
                parsed = .success(operation)
            }
            results.append(parsed)
        }
        return Request(zoneName: zoneName, operations: results, atomic: isAtomic)
    }
}

extension Limits {
    /// Refuses an array of more than `maxOperationsPerRequest` elements ("The request `verb` 7 `field`").
    package func checkCount(_ count: Int, of field: String, verb: String) throws(SyncError) {
        guard count <= maxOperationsPerRequest else {
            throw SyncError(.limitExceeded, "The request \(verb) \(count) \(field); maxOperationsPerRequest is \(maxOperationsPerRequest).")
        }
    }
}

extension Names {
    /// The zone a `zoneID` member names: absent or null is the default zone (or refused when
    /// `required`), else `{"zoneName": "..."}` with a valid name.
    package static func zoneName(ofZoneID zone: JSONValue?, required: Bool = false) throws(SyncError) -> String {
        guard let zone, !zone.isNull else {
            if required { throw SyncError(.badRequest, "This operation needs zoneID.") }
            return defaultZone
        }
        guard case .string(let name)? = zone["zoneName"] else { throw SyncError(.badRequest, "zoneID must be {\"zoneName\": \"...\"}.") }
        guard isValidZoneName(name) else {
            throw SyncError(.badRequest, "Zone name \(quoted(name)) is invalid: use 1–255 letters, digits, '-', '_', '.', ':'.")
        }
        return name
    }
}
