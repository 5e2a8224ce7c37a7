/// Standard base64 (RFC 4648 §4, the `+` `/` alphabet with `=` padding) checked without decoding:
/// encrypted field values (docs/api.md "Encrypted fields") are stored as the text sent, so only
/// the canonical encoding is accepted — one text per byte string, and the text is the bytes.
package enum Base64Text {
    /// Whether `text` is standard padded base64 in its canonical form: a length that is a
    /// multiple of 4, alphabet characters only, `=` only as the last one or two characters, and
    /// zero pad bits (RFC 4648 §3.5: an encoder sets them to zero, a decoder may refuse others).
    package static func isStandardPadded(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { isStandardPadded($0) }
    }

    static func isStandardPadded(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = bytes.count
        guard count % 4 == 0 else { return false }
        guard count > 0 else { return true }
        var padding = 0
        if bytes[count - 1] == equals { padding = bytes[count - 2] == equals ? 2 : 1 }
        for index in 0..<(count - padding) where value(bytes[index]) == invalid { return false }
        guard padding > 0 else { return true }
        // The last character before the padding carries 4 (one `=`: 2) bits the decoder drops.
        let last = value(bytes[count - padding - 1])
        return padding == 2 ? last & 0x0F == 0 : last & 0x03 == 0
    }

    /// The number of bytes a checked text decodes to.
    package static func decodedCount(_ text: String) -> Int {
        let utf8 = text.utf8
        guard utf8.count >= 4 else { return 0 }
        let padding = utf8.reversed().prefix(2).prefix { $0 == equals }.count
        return utf8.count / 4 * 3 - padding
    }

    private static let equals = UInt8(ascii: "=")
    private static let invalid: UInt8 = 0xFF

    /// The 6-bit value of an alphabet character, `invalid` for any other byte.
    private static func value(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: invalid
        }
    }
}
