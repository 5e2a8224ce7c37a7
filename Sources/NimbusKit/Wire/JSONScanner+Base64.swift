import Foundation

extension JSONScanner {
    /// A base64 string value decoded straight from the document's bytes (no `String` between):
    /// an `ENCRYPTED_BYTES` ciphertext is read once per encrypted field of every fetched record.
    /// Only canonical base64 is decoded here (length a multiple of 4, at most two `=` at the end,
    /// unused bits zero); anything else goes through `Data(base64Encoded:)` as before, so the
    /// result is Foundation's for every input. Nil when the value is not a string or not base64.
    mutating func base64Value() throws -> Data? {
        guard try kind() == .string else { try skipValue(); return nil }
        let token = try stringTokenValue()
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
        var out = Data(count: length)
        let ok = values.withUnsafeBufferPointer { table -> Bool in
            out.withUnsafeMutableBytes { raw -> Bool in
                guard let o = raw.bindMemory(to: UInt8.self).baseAddress else { return false }
                var written = 0
                var i = 0
                while i < count {
                    let last = i + 4 == count
                    let a = table[Int(text[i])], b = table[Int(text[i + 1])]
                    let c = last && padding == 2 ? 0 : table[Int(text[i + 2])]
                    let d = last && padding >= 1 ? 0 : table[Int(text[i + 3])]
                    guard (a | b | c | d) & 0xC0 == 0 else { return false }  // 0xFF: not in the alphabet
                    let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    if last && padding > 0 {
                        // Unused bits must be zero (canonical): else Foundation decides.
                        if padding == 2 && (b & 0x0F) != 0 { return false }
                        if padding == 1 && (c & 0x03) != 0 { return false }
                        o[written] = UInt8(group >> 16)
                        if padding == 1 { o[written + 1] = UInt8((group >> 8) & 0xFF) }
                        written += 3 - padding
                    } else {
                        o[written] = UInt8(group >> 16)
                        o[written + 1] = UInt8((group >> 8) & 0xFF)
                        o[written + 2] = UInt8(group & 0xFF)
                        written += 3
                    }
                    i += 4
                }
                return written == length
            }
        }
        return ok ? out : nil
    }
}
