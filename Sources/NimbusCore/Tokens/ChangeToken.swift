import NimbusSupport

/// Opaque, versioned, tamper-evident sync tokens (docs/architecture.md "Change tokens").
///
/// A zone token says "everything of this zone incarnation up to sequence N"; it is bound to the
/// zone's name by its MAC, so a token used on another zone is refused like a forged one. A
/// database token (zones/changes) carries the sequence of every zone it has seen, so the
/// database-level feed needs no database-wide counter (and no database-wide lock on writes).
package struct ZoneChangeToken: Sendable, Hashable {
    package var databaseID: Int64
    /// The zone's incarnation id: a zone deleted and re-created under its name gets a new one.
    package var zoneID: Int64
    package var sequence: Int64

    package init(databaseID: Int64, zoneID: Int64, sequence: Int64) {
        self.databaseID = databaseID
        self.zoneID = zoneID
        self.sequence = sequence
    }
}

package struct DatabaseChangeToken: Sendable, Hashable {
    package var databaseID: Int64
    /// Zone incarnation id → the zone's change sequence when last reported.
    package var zones: [Int64: Int64]

    package init(databaseID: Int64, zones: [Int64: Int64]) {
        self.databaseID = databaseID
        self.zones = zones
    }
}

/// Signs and verifies tokens with the server secret (HMAC-SHA-256, truncated to 128 bits).
package struct TokenSigner: Sendable {
    private let key: [UInt8]
    static let version: UInt8 = 1
    static let zoneKind: UInt8 = 1
    static let databaseKind: UInt8 = 2
    static let macLength = 16

    package init(key: [UInt8]) {
        self.key = key
    }

    package func encode(_ token: ZoneChangeToken, zoneName: String) -> String {
        var payload: [UInt8] = [Self.version, Self.zoneKind]
        payload.appendBigEndian(token.databaseID)
        payload.appendBigEndian(token.zoneID)
        payload.appendBigEndian(token.sequence)
        return Base64URL.encode(payload + mac(payload, context: zoneName))
    }

    /// The token if it is well-formed, ours and bound to `zoneName`; nil otherwise.
    package func decodeZoneToken(_ text: String, zoneName: String) -> ZoneChangeToken? {
        guard let bytes = Base64URL.decode(text), bytes.count == 2 + 24 + Self.macLength,
              bytes[0] == Self.version, bytes[1] == Self.zoneKind else { return nil }
        let payload = Array(bytes[0..<26])
        guard constantTimeEquals(Array(bytes[26...]), mac(payload, context: zoneName)) else { return nil }
        return ZoneChangeToken(databaseID: payload.bigEndianInt64(at: 2), zoneID: payload.bigEndianInt64(at: 10),
                               sequence: payload.bigEndianInt64(at: 18))
    }

    package func encode(_ token: DatabaseChangeToken) -> String {
        var payload: [UInt8] = [Self.version, Self.databaseKind]
        payload.appendBigEndian(token.databaseID)
        payload.appendBigEndian(Int64(token.zones.count))
        for zoneID in token.zones.keys.sorted() {
            payload.appendBigEndian(zoneID)
            payload.appendBigEndian(token.zones[zoneID] ?? 0)
        }
        return Base64URL.encode(payload + mac(payload, context: "database"))
    }

    package func decodeDatabaseToken(_ text: String) -> DatabaseChangeToken? {
        guard let bytes = Base64URL.decode(text), bytes.count >= 18 + Self.macLength,
              bytes[0] == Self.version, bytes[1] == Self.databaseKind else { return nil }
        let payload = Array(bytes[0..<(bytes.count - Self.macLength)])
        guard constantTimeEquals(Array(bytes[payload.count...]), mac(payload, context: "database")) else { return nil }
        let count = payload.bigEndianInt64(at: 10)
        guard count >= 0, count <= Int64((payload.count - 18) / 16), payload.count == 18 + Int(count) * 16 else { return nil }
        var zones: [Int64: Int64] = [:]
        for index in 0..<Int(count) {
            zones[payload.bigEndianInt64(at: 18 + index * 16)] = payload.bigEndianInt64(at: 26 + index * 16)
        }
        return DatabaseChangeToken(databaseID: payload.bigEndianInt64(at: 2), zones: zones)
    }

    /// A continuation marker or other opaque value signed with the same key.
    package func sign(_ payload: [UInt8], context: String) -> String {
        Base64URL.encode(payload + mac(payload, context: context))
    }

    package func verify(_ text: String, context: String) -> [UInt8]? {
        guard let bytes = Base64URL.decode(text), bytes.count >= Self.macLength else { return nil }
        let payload = Array(bytes[0..<(bytes.count - Self.macLength)])
        guard constantTimeEquals(Array(bytes[payload.count...]), mac(payload, context: context)) else { return nil }
        return payload
    }

    private func mac(_ payload: [UInt8], context: String) -> [UInt8] {
        var hmac = HMACSHA256(key: key)
        hmac.update(payload)
        hmac.update([0])
        hmac.update(context)
        return Array(hmac.finalize().prefix(Self.macLength))
    }
}

extension [UInt8] {
    mutating func appendBigEndian(_ value: Int64) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }

    func bigEndianInt64(at offset: Int) -> Int64 {
        var value: Int64 = 0
        for index in offset..<(offset + 8) { value = value << 8 | Int64(self[index]) }
        return value
    }
}
