import NimbusCore
import NimbusSupport

/// A database operation's body, decoded once, before the operation runs, into the values it
/// works with. Decoding refuses what the operation cannot carry out (a BAD_REQUEST or
/// LIMIT_EXCEEDED naming the field); per-item problems stay with their item.
protocol DatabaseRequest: Sendable {
    init(body: JSONValue, limits: Limits) throws

    /// The request read straight from the body's bytes when they have the common shape this
    /// type reads that way, else nil (the JSON tree then decodes them, and words any error): a
    /// value it returns is the value `init(body:limits:)` makes of the same bytes.
    static func decodeDirectly(_ bytes: [UInt8], limits: Limits) -> Self?
}

extension DatabaseRequest {
    static func decodeDirectly(_ bytes: [UInt8], limits: Limits) -> Self? { nil }

    /// A POST body decoded: directly when it can be, else through the JSON tree.
    static func decode(_ bytes: [UInt8], limits: Limits) throws -> Self {
        if let request = decodeDirectly(bytes, limits: limits) { return request }
        return try Self(body: RequestInput.parseBody(bytes), limits: limits)
    }
}

/// The body of an operation that reads none (GETs, `tokens/create`).
struct EmptyRequest: DatabaseRequest {
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
        guard entries.count <= limits.maxOperationsPerRequest else {
            throw SyncError(.limitExceeded, "The request \(verb) \(entries.count) \(field); maxOperationsPerRequest is \(limits.maxOperationsPerRequest).")
        }
        return entries
    }
}
