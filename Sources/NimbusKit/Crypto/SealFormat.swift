import Foundation

/// Where a sealed value belongs: what its associated data binds, so that a ciphertext moved to
/// another container, zone, record type, record or field fails to open.
public struct SealContext: Sendable, Hashable, Codable {
    public var container: String
    public var zone: String
    public var recordType: String
    public var recordName: String
    public var field: String

    public init(container: String, zone: String, recordType: String, recordName: String, field: String) {
        self.container = container
        self.zone = zone
        self.recordType = recordType
        self.recordName = recordName
        self.field = field
    }

    /// `prefix` (a header), `kind` (`F` field, `A` asset), then each name as a 2-byte big-endian
    /// length and its UTF-8. Built in one buffer: it runs once per encrypted field of every fetched record.
    func associatedData(kind: UInt8, prefix: Data = Data()) -> Data {
        let names = [container, zone, recordType, recordName, field]
        var bytes = [UInt8]()
        bytes.reserveCapacity(prefix.count + 11 + names.reduce(0) { $0 + $1.utf8.count })
        bytes.append(contentsOf: prefix)
        bytes.append(kind)
        for name in names {
            let length = min(name.utf8.count, Int(UInt16.max))
            bytes.append(UInt8(length >> 8))
            bytes.append(UInt8(length & 0xff))
            bytes.append(contentsOf: name.utf8.prefix(length))
        }
        return Data(bytes)
    }
}

/// The byte format of docs/encryption.md, version 1. A sealed field value:
///
///     01 | key id (4, big-endian) | nonce (12) | AES-256-GCM ciphertext | tag (16)
///
/// under the zone key `HKDF-SHA256(account key, salt "nimbus-e2e-v1", info "zone" 00 lp(container)
/// lp(zone), 32)`, with associated data `01 | key id | 'F' | lp(container) lp(zone) lp(type) lp(record) lp(field)`.
enum SealFormat {
    static let version: UInt8 = 1
    static let salt = Data("nimbus-e2e-v1".utf8)
    /// Header (version, key id) + nonce + tag: what a field adds to its plaintext.
    static let fieldOverhead = 5 + Primitives.nonceSize + Primitives.tagSize

    static func lengthPrefixed(_ text: String) -> Data {
        let bytes = Data(text.utf8)
        let length = UInt16(clamping: bytes.count)
        return Data([UInt8(length >> 8), UInt8(length & 0xff)]) + bytes.prefix(Int(length))
    }

    static func header(keyID: UInt32) -> Data {
        Data([version, UInt8(keyID >> 24), UInt8((keyID >> 16) & 0xff), UInt8((keyID >> 8) & 0xff), UInt8(keyID & 0xff)])
    }

    /// The key id of a sealed value or asset header; nil when it is not version 1.
    static func keyID(of sealed: Data) -> UInt32? {
        guard sealed.count >= 5 else { return nil }
        let s = sealed.startIndex
        guard sealed[s] == version else { return nil }
        return UInt32(sealed[s + 1]) << 24 | UInt32(sealed[s + 2]) << 16 | UInt32(sealed[s + 3]) << 8 | UInt32(sealed[s + 4])
    }

    /// The key of one container and zone, derived from an account key.
    static func zoneKey(_ accountKey: Data, container: String, zone: String) -> Data {
        let name = ZoneKeyName(accountKey: accountKey, container: container, zone: zone)
        if let key = zoneKeys.withLock({ $0[name] }) { return key }
        let key = deriveZoneKey(accountKey, container: container, zone: zone)
        zoneKeys.withLock { cache in
            if cache.count >= 256 { cache.removeAll() }
            cache[name] = key
        }
        return key
    }

    /// Derived zone keys, so a page of records derives each zone's key once (bounded).
    private static let zoneKeys = Locked<[ZoneKeyName: Data]>([:])
    private struct ZoneKeyName: Hashable {
        var accountKey: Data
        var container: String
        var zone: String
    }

    static func deriveZoneKey(_ accountKey: Data, container: String, zone: String) -> Data {
        let info = Data("zone".utf8) + Data([0]) + lengthPrefixed(container) + lengthPrefixed(zone)
        return Primitives.hkdf(ikm: accountKey, salt: salt, info: info, length: Primitives.keySize)
    }

    /// Seals a field's plaintext bytes; `nonce` is random unless a test fixes it.
    static func sealField(_ plaintext: Data, key: AccountKey, context: SealContext, nonce: Data = Primitives.random(Primitives.nonceSize)) throws -> Data {
        let header = header(keyID: key.id)
        let zoneKey = zoneKey(key.bytes, container: context.container, zone: context.zone)
        let sealed = try Primitives.seal(key: zoneKey, nonce: nonce, plaintext: plaintext, aad: context.associatedData(kind: UInt8(ascii: "F"), prefix: header))
        return header + nonce + sealed
    }

    /// Opens a sealed field with the key ring: `encryptionKeyMissing` when the ring lacks its key
    /// id, `decryptionFailed` when it is not this format or was changed or moved.
    static func openField(_ sealed: Data, keys: KeyRing, context: SealContext) throws -> Data {
        var opener = FieldOpener(container: context.container, ring: keys)
        return try opener.open(sealed, zone: context.zone, recordType: context.recordType, recordName: context.recordName, field: context.field)
    }
}

/// Why a value could not be sealed or opened; mapped to `NimbusError` codes `encryptionKeyMissing`
/// and `decryptionFailed` at the library's edge.
enum EncryptionError: Error {
    case keyMissing(SealContext?, keyID: UInt32?)
    case decryptionFailed(SealContext?, String)

    var nimbusError: NimbusError {
        switch self {
        case .keyMissing(let context, let id):
            let which = id.map { "key \($0)" } ?? "an account key"
            let whereText = context.map { " to open \($0.recordType) \($0.recordName).\($0.field)" } ?? ""
            return NimbusError(.encryptionKeyMissing, reason: "This device has no \(which)\(whereText): pair it again with the key "
                + "(the pairing URL's #k= fragment) or import the recovery phrase.", itemName: context?.recordName)
        case .decryptionFailed(let context, let why):
            let whereText = context.map { "\($0.recordType) \($0.recordName).\($0.field) in zone \($0.zone)" } ?? "An asset"
            var error = NimbusError(.decryptionFailed, reason: "\(whereText) did not decrypt: \(why). It was changed, moved "
                + "from another record or field, or sealed with another account key.", itemName: context?.recordName)
            error.fieldName = context?.field
            return error
        }
    }
}
