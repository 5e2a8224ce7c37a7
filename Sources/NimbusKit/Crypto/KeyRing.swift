import Foundation

/// One version of the user's account key: 32 random bytes and the id every ciphertext made with it
/// carries. The first device makes key 1; a rotation adds the next id.
public struct AccountKey: Sendable, Hashable, Codable {
    public var id: UInt32
    public var bytes: Data

    public init(id: UInt32, bytes: Data) throws {
        guard bytes.count == Primitives.keySize else {
            throw NimbusError(.invalidArguments, reason: "An account key is 32 bytes; this one has \(bytes.count).")
        }
        self.id = id
        self.bytes = bytes
    }

    /// A fresh random key.
    public static func generate(id: UInt32 = 1) -> AccountKey { AccountKey(random: id) }

    private init(random id: UInt32) {
        self.id = id
        bytes = Primitives.random(Primitives.keySize)
    }

    /// The key as base64url without padding (the `NIMBUS_KEY_FILE` and `#k=` form).
    public var base64URL: String { Base64URL.encode(bytes) }
}

/// Every version of the account key this device holds: the newest seals new writes, all of them
/// open what they sealed.
public struct KeyRing: Sendable, Hashable, Codable {
    public private(set) var keys: [AccountKey]

    public init(_ keys: [AccountKey] = []) {
        self.keys = []
        for key in keys { add(key) }
    }

    /// The key that seals new writes: the highest id.
    public var newest: AccountKey? { keys.last }
    public var isEmpty: Bool { keys.isEmpty }

    public func key(id: UInt32) -> AccountKey? { keys.first { $0.id == id } }

    /// Adds a key (replacing one with the same id), keeping the ring ordered by id.
    public mutating func add(_ key: AccountKey) {
        keys.removeAll { $0.id == key.id }
        keys.append(key)
        keys.sort { $0.id < $1.id }
    }

    /// A ring with a new newest key (id one above the newest): new writes use it, old ones still open.
    public func rotated() -> KeyRing {
        var ring = self
        ring.add(AccountKey.generate(id: (newest?.id ?? 0) + 1))
        return ring
    }

    /// The ring as text: one `id:base64url` per line (the `KeyStore` file and Keychain item form).
    public var text: String { keys.map { "\($0.id):\($0.base64URL)" }.joined(separator: "\n") + "\n" }

    /// Reads `text`; a single bare base64url key (the `NIMBUS_KEY_FILE` form) is key 1.
    public init(text: String) throws {
        var ring = KeyRing()
        for line in text.split(whereSeparator: \.isNewline).map({ $0.trimmingCharacters(in: .whitespaces) }) where !line.isEmpty {
            let parts = line.split(separator: ":", maxSplits: 1).map(String.init)
            let id: UInt32
            let encoded: String
            if parts.count == 2, let number = UInt32(parts[0]) { (id, encoded) = (number, parts[1]) } else { (id, encoded) = (1, line) }
            guard let bytes = Base64URL.decode(encoded) else {
                throw NimbusError(.invalidArguments, reason: "A key line is not base64url: expected 43 characters of A–Z a–z 0–9 - _.")
            }
            ring.add(try AccountKey(id: id, bytes: bytes))
        }
        self = ring
    }
}

/// base64url without padding (RFC 4648 § 5).
enum Base64URL {
    static func encode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String) -> Data? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.contains(where: { "+/=".contains($0) }) else { return nil }
        var base = trimmed.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base.count % 4 != 0 { base += "=" }
        return Data(base64Encoded: base)
    }
}
