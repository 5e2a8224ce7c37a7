import NimbusCore
import NimbusSupport

/// A database operation's body, decoded once, before the operation runs, into the values it
/// works with. Decoding refuses what the operation cannot carry out (a BAD_REQUEST or
/// LIMIT_EXCEEDED naming the field); per-item problems stay with their item.
protocol DatabaseRequest: Sendable {
    /// The request a POST body holds.
    static func decode(_ bytes: [UInt8], limits: Limits) throws -> Self
}

/// A request decoded from the body's JSON tree (`records/modify` reads its bytes instead:
/// `ModifyRecordsRequest`).
protocol JSONBodyRequest: DatabaseRequest {
    init(body: JSONValue, limits: Limits) throws
}

extension JSONBodyRequest {
    static func decode(_ bytes: [UInt8], limits: Limits) throws -> Self {
        try Self(body: RequestInput.parseBody(bytes), limits: limits)
    }
}

/// The body of an operation that reads none (GETs, `tokens/create`).
struct EmptyRequest: JSONBodyRequest {
    init(body: JSONValue, limits: Limits) {}
}

/// Fields that several operations share.
enum RequestFields {
    /// `desiredKeys`: absent or null for every field, else an array of field names.
    static func desiredKeys(_ body: JSONValue) throws(SyncError) -> Set<String>? {
        guard let keys = body["desiredKeys"], !keys.isNull else { return nil }
        guard let parsed = RecordOperation.parseDesiredKeys(keys) else {
            throw SyncError(.badRequest, "desiredKeys must be an array of field names.")
        }
        return parsed
    }

    /// An array field of at most `maxOperationsPerRequest` elements ("The request `verb` 7 `field`").
    static func entries(_ body: JSONValue, _ field: String, verb: String, missing: String, limits: Limits) throws(SyncError) -> [JSONValue] {
        guard case .array(let entries)? = body[field] else { throw SyncError(.badRequest, missing) }
        try limits.checkCount(entries.count, of: field, verb: verb)
        return entries
    }
}
