/// HMAC-SHA256 (RFC 2104; test vectors in RFC 4231): signs access tokens and other values the
/// server hands out and must later recognise. Compare results with `constantTimeEquals`.
///
/// Streaming like `SHA256`: `update` any number of times, then `finalize()` once.
package struct HMACSHA256: Sendable {
    /// Length of a MAC in bytes.
    package static let byteCount = SHA256.digestByteCount

    /// Already fed `K ⊕ ipad`; receives the message.
    private var inner = SHA256()
    /// Already fed `K ⊕ opad`; receives the inner digest at the end. Keeping the hasher rather than
    /// the key means the padded key is not stored in the authenticator.
    private var outer = SHA256()

    package init(key: some Sequence<UInt8>) {
        // RFC 2104 §2: a key longer than the block size B is replaced by its hash; the key is then
        // padded with zeros to B bytes.
        var paddedKey = [UInt8](key)
        if paddedKey.count > SHA256.blockByteCount {
            paddedKey = SHA256.hash(paddedKey)
        }
        paddedKey.append(contentsOf: repeatElement(0, count: SHA256.blockByteCount - paddedKey.count))
        inner.update(paddedKey.map { $0 ^ 0x36 })
        outer.update(paddedKey.map { $0 ^ 0x5c })
    }

    /// Authenticates the bytes in `bytes`.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        inner.update(bytes)
    }

    /// Authenticates a sequence of bytes; contiguous ones are read in place.
    package mutating func update(_ bytes: some Sequence<UInt8>) {
        inner.update(bytes)
    }

    /// Authenticates the UTF-8 encoding of `string`.
    package mutating func update(_ string: String) {
        inner.update(string)
    }

    /// Returns the 32-byte MAC: `H(K ⊕ opad, H(K ⊕ ipad, message))`.
    package consuming func finalize() -> [UInt8] {
        let innerDigest = inner.finalize()
        outer.update(innerDigest)
        return outer.finalize()
    }

    /// The HMAC-SHA256 of `message` under `key`.
    package static func authenticate(_ message: some Sequence<UInt8>, key: some Sequence<UInt8>) -> [UInt8] {
        var authenticator = HMACSHA256(key: key)
        authenticator.update(message)
        return authenticator.finalize()
    }

    /// The HMAC-SHA256 of the UTF-8 encoding of `message` under `key`.
    package static func authenticate(_ message: String, key: some Sequence<UInt8>) -> [UInt8] {
        var authenticator = HMACSHA256(key: key)
        authenticator.update(message)
        return authenticator.finalize()
    }
}

/// Whether `a` and `b` hold the same bytes, in time that depends only on their lengths, so that
/// comparing a presented MAC or digest with the expected one does not reveal how many leading bytes
/// of a forgery were right. Lengths are public (a MAC's length is fixed), so they may short-circuit.
package func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for index in a.indices {
        difference |= a[index] ^ b[index]
    }
    return difference == 0
}
