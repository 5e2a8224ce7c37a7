#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The byte classes of HTTP's ABNF (RFC 9110 §5.6, RFC 5234 Appendix B.1), as branch-only tests
/// the optimizer turns into range compares: the parser classifies every byte of a head with them.
extension UInt8 {
    static let cr = UInt8(ascii: "\r")
    static let lf = UInt8(ascii: "\n")
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")
    static let colon = UInt8(ascii: ":")
    static let semicolon = UInt8(ascii: ";")
    static let comma = UInt8(ascii: ",")
    static let equals = UInt8(ascii: "=")
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let slash = UInt8(ascii: "/")
    static let asterisk = UInt8(ascii: "*")
    static let hash = UInt8(ascii: "#")

    var isASCIILetter: Bool { (self | 0x20) >= UInt8(ascii: "a") && (self | 0x20) <= UInt8(ascii: "z") }

    var isASCIIDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }

    /// SP or HTAB: the whitespace of OWS and BWS.
    var isWhitespace: Bool { self == .space || self == .tab }

    /// `tchar` (RFC 9110 §5.6.2): the bytes of methods, field names and other tokens.
    var isTokenCharacter: Bool {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "a")...UInt8(ascii: "z"):
            true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    /// A byte allowed in a field value (RFC 9110 §5.5): VCHAR, SP, HTAB and obs-text (0x80–0xFF).
    /// Everything else is a control character: 0x00–0x1F except HTAB, and DEL.
    var isFieldValueCharacter: Bool { (self >= 0x20 && self != 0x7F) || self == .tab }

    /// A byte allowed in a request-target: visible ASCII only. Non-ASCII must be percent-encoded
    /// (RFC 3986 §2.1), so a raw byte ≥ 0x80 is rejected rather than guessed at.
    var isTargetCharacter: Bool { self >= 0x21 && self <= 0x7E }

    /// `qdtext` and the second byte of a `quoted-pair` in a quoted-string (RFC 9110 §5.6.4), minus DQUOTE and backslash.
    var isQuotedTextCharacter: Bool {
        self == .tab || self == .space || self == 0x21 || (self >= 0x23 && self != .backslash && self != 0x7F)
    }

    /// A byte of a reg-name or IP-literal in a Host value apart from pct-encoded and ":" (RFC 3986
    /// §3.2.2): unreserved (ALPHA DIGIT "-" "." "_" "~") and sub-delims ("!" "$" "&" "'" "(" ")"
    /// "*" "+" "," ";" "=").
    var isHostCharacter: Bool {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "a")...UInt8(ascii: "z"):
            true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "!"),
             UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="):
            true
        default:
            false
        }
    }

    /// The value of a HEXDIG (either case), or nil.
    var hexDigitValue: Int? {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(self &- UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(self &- UInt8(ascii: "a") &+ 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(self &- UInt8(ascii: "A") &+ 10)
        default: nil
        }
    }
}

extension UnsafeRawBufferPointer {
    /// The index of the first `byte` at or after `start`, found with libc's vectorised `memchr`.
    func firstIndex(of byte: UInt8, from start: Int) -> Int? {
        guard start < count, let base = baseAddress else { return nil }
        guard let found = memchr(base + start, Int32(byte), count - start) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }

    /// The bytes of `range` as a buffer of their own, indexed from 0.
    func slice(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[range])
    }

    /// The bytes decoded as UTF-8, invalid sequences replaced (obs-text in field values is rare and
    /// has no defined charset; RFC 9110 §5.5 says to treat it as opaque data).
    func decodedString() -> String {
        withMemoryRebound(to: UInt8.self) { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether the bytes are exactly `text`.
    func equalsCaseSensitive(_ text: StaticString) -> Bool {
        count == text.utf8CodeUnitCount && elementsEqual(UnsafeRawBufferPointer(start: text.utf8Start, count: count))
    }

    /// Whether the bytes equal `lowercase` ignoring ASCII case; `lowercase` must be lower-case
    /// letters, digits and `-`, and the bytes a token, so OR-ing 0x20 into each byte is a safe case fold.
    func equalsCaseInsensitive(_ lowercase: StaticString) -> Bool {
        guard count == lowercase.utf8CodeUnitCount else { return false }
        let expected = UnsafeRawBufferPointer(start: lowercase.utf8Start, count: count)
        for index in 0..<count where self[index] | 0x20 != expected[index] { return false }
        return true
    }
}
