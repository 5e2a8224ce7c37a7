import NimbusSupport
import NimbusCore

/// What the write fast path of `records/modify` takes on trust from earlier requests: the
/// session a token resolved to, a zone's id, a container's schema with its version. Every entry
/// is checked again inside the write statement (the token is live, the zone is the same and not
/// deleted, the schema version is unchanged); a failed check sends the request down the full
/// path, which refreshes the entry. Each map is bounded: when full it starts over.
final class WriteCaches: Sendable {
    struct SessionKey: Hashable {
        var tokenDigest: [UInt8]
        var container: String
        var environment: Environment
    }

    struct ZoneKey: Hashable {
        var databaseID: Int64
        var zoneName: String
    }

    struct SchemaKey: Hashable {
        var container: String
        var environment: Environment
    }

    struct CachedSchema: Sendable {
        var version: Int64
        var types: [String: RecordTypeSchema]
    }

    static let capacity = 10_000

    private let sessions = Lock<[SessionKey: Session]>([:])
    private let zones = Lock<[ZoneKey: Int64]>([:])
    private let schemas = Lock<[SchemaKey: CachedSchema]>([:])

    func session(_ key: SessionKey) -> Session? { sessions.withLock { $0[key] } }
    func zoneID(_ key: ZoneKey) -> Int64? { zones.withLock { $0[key] } }
    func schema(_ key: SchemaKey) -> CachedSchema? { schemas.withLock { $0[key] } }

    func remember(_ session: Session, for key: SessionKey) { sessions.withLock { Self.store(session, for: key, in: &$0) } }
    func forgetSession(_ key: SessionKey) { _ = sessions.withLock { $0.removeValue(forKey: key) } }
    func remember(zoneID: Int64, for key: ZoneKey) { zones.withLock { Self.store(zoneID, for: key, in: &$0) } }
    func forgetZone(_ key: ZoneKey) { _ = zones.withLock { $0.removeValue(forKey: key) } }
    func remember(_ schema: CachedSchema, for key: SchemaKey) {
        schemas.withLock { cached in
            // Versions only grow: a slow reader must not put back an older schema.
            if let current = cached[key], current.version > schema.version { return }
            Self.store(schema, for: key, in: &cached)
        }
    }

    private static func store<Key: Hashable, Value>(_ value: Value, for key: Key, in map: inout [Key: Value]) {
        if map.count >= capacity && map[key] == nil { map.removeAll(keepingCapacity: true) }
        map[key] = value
    }
}
