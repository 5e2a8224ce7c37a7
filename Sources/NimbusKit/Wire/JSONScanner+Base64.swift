import Foundation

extension JSONScanner {
    /// A base64 string value decoded straight from the document's bytes (no `String` between):
    /// an `ENCRYPTED_BYTES` ciphertext is read once per encrypted field of every fetched record.
    /// Only canonical base64 is decoded here (length a multiple of 4, at most two `=` at the end,
    /// unused bits zero); anything else goes through `Data(base64Encoded:)` as before, so the
    /// result is Foundation's for every input. Nil when the value is not a string or not base64.
    mutating func base64Value() throws -> Data? {
        guard try kind() == .string else { try skipValue(); return nil }
        return try base64(stringTokenValue())
    }

    /// A string token's base64 decoded (canonical from the bytes, anything else through
    /// `Data(base64Encoded:)`); nil when it is not base64.
    func base64(_ token: Token) throws -> Data? {
        if !token.escaped, let data = withBytes(token.range, Base64Canonical.decode) { return data }
        return Data(base64Encoded: try decode(token))
    }
}

/// Canonical base64 (RFC 4648 § 4, padded) from bytes; nil for anything else.
enum Base64Canonical {
    /// 0–63 for the alphabet, 0xFF otherwise.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(byte)] = UInt8(index)
        }
        return table
    }()

    static func decode(_ text: UnsafeBufferPointer<UInt8>) -> Data? {
        let count = text.count
        guard count % 4 == 0 else { return nil }
        if count == 0 { return Data() }
        var padding = 0
        if text[count - 1] == UInt8(ascii: "=") { padding = text[count - 2] == UInt8(ascii: "=") ? 2 : 1 }
        let length = count / 4 * 3 - padding
        // Decoded into a buffer the `Data` then owns (no zero-filled `Data` written through
        // `withUnsafeMutableBytes`: ~90 ns of a sealed field's ~100-byte ciphertext).
        guard let o = malloc(max(length, 1))?.assumingMemoryBound(to: UInt8.self) else { return nil }
        let ok = values.withUnsafeBufferPointer { table -> Bool in
            guard let t = table.baseAddress, let input = text.baseAddress else { return false }
            // Every group but the last: four symbols, three bytes, no padding test.
            let full = padding == 0 ? count : count - 4
            var bad: UInt8 = 0
            var i = 0, written = 0
            while i < full {
                let a = t[Int(input[i])], b = t[Int(input[i + 1])], c = t[Int(input[i + 2])], d = t[Int(input[i + 3])]
                bad |= a | b | c | d
                let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                o[written] = UInt8(truncatingIfNeeded: group >> 16)
                o[written + 1] = UInt8(truncatingIfNeeded: group >> 8)
                o[written + 2] = UInt8(truncatingIfNeeded: group)
                i += 4
                written += 3
            }
            guard bad & 0xC0 == 0 else { return false }  // 0xFF: not in the alphabet
            guard padding > 0 else { return written == length }
            // The padded last group; its unused bits must be zero (canonical), else Foundation decides.
            let a = t[Int(input[i])], b = t[Int(input[i + 1])]
            let c = padding == 2 ? 0 : t[Int(input[i + 2])]
            guard (a | b | c) & 0xC0 == 0 else { return false }
            if padding == 2 && (b & 0x0F) != 0 { return false }
            if padding == 1 && (c & 0x03) != 0 { return false }
            let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
            o[written] = UInt8(truncatingIfNeeded: group >> 16)
            if padding == 1 { o[written + 1] = UInt8(truncatingIfNeeded: group >> 8) }
            written += 3 - padding
            return written == length
        }
        guard ok else {
            free(o)
            return nil
        }
        return Data(bytesNoCopy: o, count: length, deallocator: .free)
    }
}
