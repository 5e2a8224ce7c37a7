/// Writes JSON values as compact UTF-8 (RFC 8259). See `JSONValue.serialized(sortedKeys:)`.
package struct JSONWriter {
    package private(set) var bytes: [UInt8]
    package let sortedKeys: Bool

    package init(bytes: [UInt8] = [], sortedKeys: Bool) {
        self.bytes = bytes
        self.sortedKeys = sortedKeys
    }

    package mutating func write(_ value: JSONValue) {
        switch value {
        case .null:
            append("null")
        case .bool(let flag):
            append(flag ? "true" : "false")
        case .integer(let integer):
            write(integer)
        case .double(let double):
            write(double)
        case .string(let string):
            write(string)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            var members = object.members
            if sortedKeys {
                members.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            }
            for (index, member) in members.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(member.key)
                bytes.append(UInt8(ascii: ":"))
                write(member.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Bytes that are already JSON, as they are.
    package mutating func appendJSON(_ json: [UInt8]) {
        bytes.append(contentsOf: json)
    }

    package mutating func appendJSON(_ json: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: json)
    }

    package mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    package mutating func write(_ integer: Int64) {
        IntegerDigits.withText(integer, radix: 10) { bytes.append(contentsOf: $0) }
    }

    /// A double as `DoubleText` spells it (`null` when not finite).
    package mutating func write(_ double: Double) {
        DoubleText.withText(double) { bytes.append(contentsOf: $0) }
    }

    /// RFC 8259 §7: `"` and `\` and U+0000...U+001F must be escaped; nothing else is. `/` and
    /// non-ASCII are written as they are.
    package mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { write(utf8: $0) }
    }

    /// A JSON string of UTF-8 text given as bytes (valid UTF-8: only quotes, backslashes and
    /// control characters are escaped).
    package mutating func write(utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        var runStart = 0
        for index in 0..<utf8.count {
            let byte = utf8[index]
            guard JSONEscape.isNeeded(byte) else { continue }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
            appendEscape(for: byte)
            runStart = index + 1
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendEscape(for byte: UInt8) {
        JSONEscape.write(byte) { bytes.append(contentsOf: $0) }
    }
}

/// RFC 8259 §7's escapes, shared by `JSONWriter` and `JSONPageWriter`.
enum JSONEscape {
    /// Whether a byte of a string must be escaped: `"`, `\` and U+0000...U+001F; nothing else is.
    @inline(__always)
    static func isNeeded(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// Where the run of bytes from `start` that need no escape (and are ASCII, with `asciiOnly`)
    /// may end, found eight at a time: names, ids and most values have no such byte. A word
    /// passes when no byte is below 0x20, `"` or `\\` (the classic test for a byte below a
    /// limit, on the word, on it XOR `"` and on it XOR `\\`) and, with `asciiOnly`, none has its
    /// high bit set. Returns the offset of the first word that may hold one (or of the tail
    /// shorter than a word): the caller goes on a byte at a time from there.
    @inline(__always)
    static func plainRun(_ bytes: UnsafeRawBufferPointer, from start: Int, asciiOnly: Bool) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        func hasByteBelow(_ word: UInt64, _ limit: UInt64) -> Bool { (word &- ones &* limit) & ~word & highs != 0 }
        var index = start
        while index + 8 <= bytes.count {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            if (asciiOnly && word & highs != 0) || hasByteBelow(word, 0x20) || hasByteBelow(word ^ (ones &* 0x22), 1)
                || hasByteBelow(word ^ (ones &* 0x5C), 1) {
                return index
            }
            index += 8
        }
        return index
    }

    /// Hands `append` the escape of such a byte: its two-character form, or `\u00XX`.
    static func write(_ byte: UInt8, _ append: (UnsafeRawBufferPointer) -> Void) {
        let short: StaticString
        switch byte {
        case UInt8(ascii: "\""): short = "\\\""
        case UInt8(ascii: "\\"): short = "\\\\"
        case 0x08: short = "\\b"
        case 0x0C: short = "\\f"
        case 0x0A: short = "\\n"
        case 0x0D: short = "\\r"
        case 0x09: short = "\\t"
        default:
            let hex: StaticString = "0123456789abcdef"
            var escape: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0x5C, 0x75, 0x30, 0x30, 0, 0)   // \u00
            escape.4 = hex.utf8Start[Int(byte >> 4)]
            escape.5 = hex.utf8Start[Int(byte & 0x0F)]
            withUnsafeBytes(of: &escape) { append($0) }
            return
        }
        append(UnsafeRawBufferPointer(start: short.utf8Start, count: short.utf8CodeUnitCount))
    }
}

/// An integer's text, written from the right into a stack buffer and handed over in one piece
/// (shared by `JSONWriter` and `JSONPageWriter`: two stamps and a change tag per record of a page).
enum IntegerDigits {
    /// Hands `body` the digits of `integer` in `radix` (10 or 36, lower-case letters, as
    /// `String(_:radix:)` spells them), after a `-` when negative.
    @inline(__always)
    static func withText<R>(_ integer: Int64, radix: UInt64, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        precondition(radix >= 10 && radix <= 36, "a radix of 10...36 fits the buffer")
        // 24 bytes: "-" and Int64's 19 decimal digits fit (fewer in any larger radix).
        var buffer: (UInt64, UInt64, UInt64) = (0, 0, 0)
        var magnitude = integer.magnitude
        let digits: StaticString = "0123456789abcdefghijklmnopqrstuvwxyz"
        return withUnsafeMutableBytes(of: &buffer) { text in
            var start = text.count
            repeat {
                start -= 1
                text[start] = digits.utf8Start[Int(magnitude % radix)]
                magnitude /= radix
            } while magnitude != 0
            if integer < 0 {
                start -= 1
                text[start] = UInt8(ascii: "-")
            }
            return body(UnsafeRawBufferPointer(rebasing: text[start...]))
        }
    }
}

/// A double's JSON text, shared by `JSONWriter` and `JSONPageWriter`. Swift's `description` is the
/// shortest text that parses back to the same bits, and its forms (`0.1`, `1e-05`, `1.5e+300`,
/// `-0.0`) are all JSON numbers. An integral value prints with `.0` below 2^53 and with an exponent
/// above it; either way it re-parses as a double. Not finite: `null`.
enum DoubleText {
    /// Hands `body` the text of `double`, in one or two pieces.
    static func withText(_ double: Double, _ body: (UnsafeRawBufferPointer) -> Void) {
        guard double.isFinite else { return constant("null", body) }
        var text = double.description
        text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        if !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") }) {
            constant(".0", body)        // defensive: keep it a double if the format ever changes
        }
    }

    private static func constant(_ text: StaticString, _ body: (UnsafeRawBufferPointer) -> Void) {
        body(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
