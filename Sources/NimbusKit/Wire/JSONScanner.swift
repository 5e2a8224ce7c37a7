import Foundation

/// A forward reader over the bytes of one JSON document, for answers too large to go through
/// `JSONSerialization`'s tree of boxed values (a page of `records/changes`: 400 records). It reads
/// what the caller asks for in document order and skips the rest; every malformed input is an
/// error, never a crash. Lives only inside `withUnsafeBytes` of the answer's data.
struct JSONScanner {
    private let bytes: UnsafeBufferPointer<UInt8>
    private(set) var index: Int

    /// A scanner over `bytes` from `index`.
    init(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int = 0) {
        self.bytes = bytes
        self.index = index
    }

    /// A key or string as it is in the document (between the quotes, escapes not applied).
    struct Token {
        var range: Range<Int>
        var escaped: Bool
    }

    /// A scanner over the same bytes standing at `index` (a position this one passed).
    func at(_ index: Int) -> JSONScanner { JSONScanner(bytes, at: index) }

    private func fail(_ what: String) -> NimbusError {
        JSON.bad("The server's answer is not valid JSON (\(what) at byte \(index) of \(bytes.count)).")
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    /// The next significant byte, not consumed (nil at the end).
    mutating func peek() -> UInt8? {
        skipWhitespace()
        return index < bytes.count ? bytes[index] : nil
    }

    mutating func expect(_ byte: UInt8) throws {
        guard peek() == byte else { throw fail("expected '\(Character(Unicode.Scalar(byte)))'") }
        index += 1
    }

    /// At the end of the document (only whitespace left).
    mutating func atEnd() -> Bool { peek() == nil }

    /// Whether the next value is `null`; consumes it when it is.
    mutating func takeNull() throws -> Bool {
        guard peek() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    private mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count,
              word.withUTF8Buffer({ $0.elementsEqual(bytes[index..<(index + count)]) }) else { throw fail("unknown literal") }
        index += count
    }

    // MARK: objects and arrays

    /// Consumes `{`; then `nextKey` until it returns nil.
    mutating func beginObject() throws { try expect(UInt8(ascii: "{")) }

    /// The next member's key (the scanner then stands at its value), or nil after the closing `}`.
    /// `first` is true before the first member (set to false here).
    mutating func nextKey(_ first: inout Bool) throws -> Token? {
        guard let next = peek() else { throw fail("unterminated object") }
        if next == UInt8(ascii: "}") { index += 1; return nil }
        if !first { try expect(UInt8(ascii: ",")) }
        first = false
        guard peek() == UInt8(ascii: "\"") else { throw fail("expected a key") }
        let key = try stringToken()
        try expect(UInt8(ascii: ":"))
        return key
    }

    /// Consumes `[`; then `nextElement` until it returns false.
    mutating func beginArray() throws { try expect(UInt8(ascii: "[")) }

    /// True when another element follows (the scanner stands at it); false after the closing `]`.
    mutating func nextElement(_ first: inout Bool) throws -> Bool {
        guard let next = peek() else { throw fail("unterminated array") }
        if next == UInt8(ascii: "]") { index += 1; return false }
        if !first { try expect(UInt8(ascii: ",")) }
        first = false
        return true
    }

    /// Whether `token` (a key) is exactly `name` (keys with escapes are compared decoded).
    func matches(_ token: Token, _ name: StaticString) -> Bool {
        if token.escaped { return (try? decode(token)) == String(describing: name) }
        // memcmp, not `elementsEqual`: this runs for every key of a page (a few percent of a first sync).
        let count = name.utf8CodeUnitCount
        guard token.range.count == count else { return false }
        guard count > 0, let base = bytes.baseAddress else { return true }
        return memcmp(base + token.range.lowerBound, name.utf8Start, count) == 0
    }

    // MARK: values

    /// The next value's kind, by its first byte.
    enum Kind { case object, array, string, number, bool, null }

    mutating func kind() throws -> Kind {
        guard let next = peek() else { throw fail("expected a value") }
        switch next {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        default: throw fail("expected a value")
        }
    }

    /// A string value, or nil when the value is not a string (then it is skipped).
    mutating func stringValue() throws -> String? {
        guard try kind() == .string else { try skipValue(); return nil }
        return try decode(stringToken())
    }

    /// A boolean value, or nil when the value is not `true` or `false` (then it is skipped).
    mutating func boolValue() throws -> Bool? {
        switch peek() {
        case UInt8(ascii: "t"): try literal("true"); return true
        case UInt8(ascii: "f"): try literal("false"); return false
        default: try skipValue(); return nil
        }
    }

    /// A number value as written, or nil when the value is not a number (then it is skipped).
    mutating func numberValue() throws -> JSONNumber? {
        guard try kind() == .number else { try skipValue(); return nil }
        let start = index
        var integral = true
        scan: while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"): index += 1
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): integral = false; index += 1
            default: break scan
            }
        }
        guard let number = JSONNumber(bytes[start..<index], integral: integral) else { throw fail("bad number") }
        return number
    }

    /// Skips one value of any kind.
    mutating func skipValue() throws {
        switch try kind() {
        case .object:
            try beginObject()
            var first = true
            while try nextKey(&first) != nil { try skipValue() }
        case .array:
            try beginArray()
            var first = true
            while try nextElement(&first) { try skipValue() }
        case .string: _ = try stringToken()
        case .number: _ = try numberValue()
        case .bool: _ = try boolValue()
        case .null: try literal("null")
        }
    }

    /// The string value at the scanner as a token, escapes not applied (for readers beside this file).
    /// Read eight bytes at a time: for values, which may be long (a sealed value's base64), not
    /// keys (short: the word test would cost more than it saves).
    mutating func stringTokenValue() throws -> Token { try stringToken(wide: true) }

    /// The document's bytes in `range` (a token's), for the duration of `body`.
    func withBytes<R>(_ range: Range<Int>, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        body(UnsafeBufferPointer(rebasing: bytes[range]))
    }

    /// The string at the scanner (standing on its opening quote), escapes not applied.
    private mutating func stringToken(wide: Bool = false) throws -> Token {
        index += 1
        let start = index
        var escaped = false
        // Eight bytes at a time while none is a quote, a backslash or a control character (a
        // sealed value's base64 is ~100 bytes of none); the byte loop takes it from the first word that has one.
        if wide, let base = bytes.baseAddress {
            while index + 8 <= bytes.count, !Self.hasSpecialByte(UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)) {
                index += 8
            }
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return Token(range: start..<(index - 1), escaped: escaped)
            }
            if byte == UInt8(ascii: "\\") { escaped = true; index += 2; continue }
            if byte < 0x20 { throw fail("control character in a string") }
            index += 1
        }
        throw fail("unterminated string")
    }

    /// Whether any of the eight bytes is `"`, a backslash or below 0x20 (exact: the classic "has a zero
    /// byte" and "has a byte less than n" tests on the word).
    private static func hasSpecialByte(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
        let found = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
        return found & highs != 0
    }

    /// The text of a string token with its escapes applied.
    func decode(_ token: Token) throws -> String {
        let raw = UnsafeBufferPointer(rebasing: bytes[token.range])
        guard token.escaped else { return String(decoding: raw, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = 0
        while i < raw.count {
            let byte = raw[i]
            guard byte == UInt8(ascii: "\\") else { out.append(byte); i += 1; continue }
            guard i + 1 < raw.count else { throw fail("bad escape") }
            let code = raw[i + 1]
            i += 2
            switch code {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(code)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4(raw, &i)
                if (0xD800..<0xDC00).contains(scalar), i + 1 < raw.count,
                   raw[i] == UInt8(ascii: "\\"), raw[i + 1] == UInt8(ascii: "u") {
                    var j = i + 2
                    let low = try hex4(raw, &j)
                    if (0xDC00..<0xE000).contains(low) {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        i = j
                    }
                }
                // A lone surrogate becomes U+FFFD, as Foundation's decoder does not fail on it either.
                out.append(contentsOf: Array(String(Character(Unicode.Scalar(scalar) ?? "\u{FFFD}")).utf8))
            default: throw fail("bad escape")
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private func hex4(_ raw: UnsafeBufferPointer<UInt8>, _ i: inout Int) throws -> UInt32 {
        guard i + 4 <= raw.count else { throw fail("bad \\u escape") }
        var value: UInt32 = 0
        for byte in raw[i..<(i + 4)] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("bad \\u escape")
            }
            value = value << 4 | UInt32(digit)
        }
        i += 4
        return value
    }
}

/// A JSON number as written: an integer (no fraction or exponent) keeps its exact value.
enum JSONNumber: Equatable {
    case integer(Int64)
    case fraction(Double)

    init?(_ digits: Slice<UnsafeBufferPointer<UInt8>>, integral: Bool) {
        if integral, let value = JSONNumber.int64(digits) { self = .integer(value); return }
        guard let value = Double(String(decoding: UnsafeBufferPointer(rebasing: digits), as: UTF8.self)) else { return nil }
        self = .fraction(value)
    }

    private static func int64(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> Int64? {
        var i = digits.startIndex
        let negative = i < digits.endIndex && digits[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        guard i < digits.endIndex else { return nil }
        // Accumulated negatively: Int64.min has no positive counterpart.
        var value: Int64 = 0
        while i < digits.endIndex {
            let byte = digits[i]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (next, o2) = times.subtractingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }  // beyond Int64: through Double
            value = next
            i += 1
        }
        if negative { return value }
        return value == .min ? nil : -value
    }

    /// As `JSON.int64`: an integer, or a fraction with no fractional part within Int64's range.
    var int64: Int64? {
        switch self {
        case .integer(let v): return v
        case .fraction(let v): return v.rounded() == v && abs(v) < 9.2e18 ? Int64(v) : nil
        }
    }

    var double: Double {
        switch self {
        case .integer(let v): return Double(v)
        case .fraction(let v): return v
        }
    }
}
