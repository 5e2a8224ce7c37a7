/// A pairing code (docs/api.md "Devices"): 10 characters of Crockford base32 (50 random bits),
/// shown as `ABCD-EFGH-JK`. Case, dashes and spaces are ignored when it is entered; any other
/// character is refused, never guessed (Crockford's readings of I, L and O as 1, 1 and 0
/// included: a code with them was mistyped).
package struct PairingCode: Sendable, Hashable {
    /// The 32 symbols, in value order.
    package static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    package static let length = 10

    /// The canonical form: 10 upper-case symbols, no separators.
    package let text: String

    /// A fresh code from 50 bits of `generator`.
    package init(using generator: inout some RandomNumberGenerator) {
        let bits = UInt64.random(in: 0..<(1 << 50), using: &generator)
        text = String(decoding: (0..<Self.length).map { index in
            Self.alphabet[Int((bits >> UInt64(5 * (Self.length - 1 - index))) & 31)]
        }, as: UTF8.self)
    }

    /// A code as entered; throws what is wrong with it.
    package init(entered: String) throws(Problem) {
        var symbols: [UInt8] = []
        for character in entered.unicodeScalars {
            if character == "-" || character == " " { continue }
            guard character.isASCII else { throw .badCharacter(String(character)) }
            var byte = UInt8(character.value)
            if byte >= UInt8(ascii: "a"), byte <= UInt8(ascii: "z") { byte -= 32 }
            guard Self.alphabet.contains(byte) else { throw .badCharacter(String(character)) }
            symbols.append(byte)
        }
        guard !symbols.isEmpty else { throw .empty }
        guard symbols.count == Self.length else { throw .wrongLength(symbols.count) }
        text = String(decoding: symbols, as: UTF8.self)
    }

    /// `ABCD-EFGH-JK`.
    package var display: String {
        let characters = Array(text)
        return String(characters[0..<4]) + "-" + String(characters[4..<8]) + "-" + String(characters[8...])
    }

    /// What is wrong with an entered code.
    package enum Problem: Error, Sendable, Equatable {
        case empty
        case wrongLength(Int)
        case badCharacter(String)

        package var reason: String {
            switch self {
            case .empty: "code is empty; enter the 10-character pairing code (like ABCD-EFGH-JK)."
            case .wrongLength(let count): "code has \(count) characters; a pairing code has 10 (dashes and spaces aside)."
            case .badCharacter(let character):
                "code contains \(character.debugDescription), which is not in a pairing code: use 0-9 and A-Z without I, L, O and U."
            }
        }
    }
}

/// `nimbus://pair?server=<public base URL, percent-encoded>&code=<code>` (docs/api.md).
package enum PairingURL {
    package static func make(server: String, code: PairingCode) -> String {
        "nimbus://pair?server=\(percentEncoded(server))&code=\(code.text)"
    }

    /// RFC 3986 unreserved characters kept; every other byte percent-encoded.
    package static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 15)])
            }
        }
        return out
    }
}
