extension JSONParser {
    /// Parses the string whose opening quote is at `offset` (RFC 8259 §7), leaving `offset` after
    /// the closing quote. Raw bytes are checked as strict UTF-8 (RFC 3629 §4: no overlongs, no
    /// encoded surrogates, nothing above U+10FFFF) so that every accepted string round-trips.
    mutating func parseString() throws(ParseError) -> String {
        let quote = offset
        let start = offset + 1
        // Fast path: no escapes, so the string is a slice of the input; plain ASCII eight bytes
        // at a time, then a byte at a time.
        var index = JSONEscape.plainRun(UnsafeRawBufferPointer(input), from: start, asciiOnly: true)
        while index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "\"") {
                try checkStringLength(index - start, quote: quote)
                offset = index + 1
                return String(decoding: UnsafeBufferPointer(rebasing: input[start..<index]), as: UTF8.self)
            } else if byte == UInt8(ascii: "\\") {
                return try parseEscapedString(quote: quote, firstEscape: index)
            } else if byte < 0x20 {
                throw controlCharacterError(at: index)
            } else if byte < 0x80 {
                index += 1
            } else {
                index = try validateUTF8Sequence(at: index)
            }
        }
        throw ParseError(offset: quote, reason: "unterminated string")
    }

    private mutating func parseEscapedString(quote: Int, firstEscape: Int) throws(ParseError) -> String {
        scratch.removeAll(keepingCapacity: true)
        var runStart = quote + 1
        var index = firstEscape
        while index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "\"") {
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<index]))
                try checkStringLength(scratch.count, quote: quote)
                offset = index + 1
                return String(decoding: scratch, as: UTF8.self)
            } else if byte == UInt8(ascii: "\\") {
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<index]))
                index = try decodeEscape(at: index)
                runStart = index
            } else if byte < 0x20 {
                throw controlCharacterError(at: index)
            } else if byte < 0x80 {
                index += 1
            } else {
                index = try validateUTF8Sequence(at: index)
            }
        }
        throw ParseError(offset: quote, reason: "unterminated string")
    }

    private func checkStringLength(_ length: Int, quote: Int) throws(ParseError) {
        guard length <= limits.maxStringBytes else {
            throw ParseError(offset: quote, reason: "string longer than \(limits.maxStringBytes) bytes")
        }
    }

    private func controlCharacterError(at index: Int) -> ParseError {
        let hex = String(input[index], radix: 16, uppercase: true)
        return ParseError(offset: index, reason: "unescaped control character U+\(String(repeating: "0", count: 4 - hex.count))\(hex) in a string")
    }

    /// Decodes the escape at `index` (a backslash) into `scratch`; returns the index after it.
    private mutating func decodeEscape(at index: Int) throws(ParseError) -> Int {
        guard index + 1 < input.count else {
            throw ParseError(offset: index, reason: "unterminated escape sequence")
        }
        let decoded: UInt8
        switch input[index + 1] {
        case UInt8(ascii: "\""): decoded = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): decoded = UInt8(ascii: "\\")
        case UInt8(ascii: "/"): decoded = UInt8(ascii: "/")
        case UInt8(ascii: "b"): decoded = 0x08
        case UInt8(ascii: "f"): decoded = 0x0C
        case UInt8(ascii: "n"): decoded = 0x0A
        case UInt8(ascii: "r"): decoded = 0x0D
        case UInt8(ascii: "t"): decoded = 0x09
        case UInt8(ascii: "u"): return try decodeUnicodeEscape(at: index)
        default:
            let byte = input[index + 1]
            let shown = byte >= 0x21 && byte < 0x7F ? " '\\\(Character(Unicode.Scalar(byte)))'" : ""
            throw ParseError(offset: index, reason: "invalid escape sequence\(shown)")
        }
        scratch.append(decoded)
        return index + 2
    }

    /// `\uXXXX`, or a `\uD8xx\uDCxx` surrogate pair (RFC 8259 §7). A surrogate that is not half of
    /// a correctly ordered pair has no UTF-8 form, so it is rejected rather than replaced.
    private mutating func decodeUnicodeEscape(at index: Int) throws(ParseError) -> Int {
        let unit = try hexQuad(at: index)
        var scalar = UInt32(unit)
        var end = index + 6
        switch unit {
        case 0xD800..<0xDC00:
            guard end + 1 < input.count, input[end] == UInt8(ascii: "\\"), input[end + 1] == UInt8(ascii: "u") else {
                throw ParseError(offset: index, reason: "unpaired high surrogate escape")
            }
            let low = try hexQuad(at: end)
            guard (0xDC00..<0xE000).contains(low) else {
                throw ParseError(offset: index, reason: "unpaired high surrogate escape")
            }
            scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            end += 6
        case 0xDC00..<0xE000:
            throw ParseError(offset: index, reason: "unpaired low surrogate escape")
        default:
            break
        }
        appendUTF8(of: scalar)
        return end
    }

    /// The four hex digits after the `\u` at `index`.
    private func hexQuad(at index: Int) throws(ParseError) -> UInt16 {
        guard index + 6 <= input.count else {
            throw ParseError(offset: index, reason: "invalid \\u escape, expected four hex digits")
        }
        var value: UInt16 = 0
        for position in index + 2..<index + 6 {
            let byte = input[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw ParseError(offset: index, reason: "invalid \\u escape, expected four hex digits")
            }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    private mutating func appendUTF8(of scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            scratch.append(UInt8(scalar))
        case ..<0x800:
            scratch.append(0xC0 | UInt8(scalar >> 6))
            scratch.append(0x80 | UInt8(scalar & 0x3F))
        case ..<0x10000:
            scratch.append(0xE0 | UInt8(scalar >> 12))
            scratch.append(0x80 | UInt8(scalar >> 6 & 0x3F))
            scratch.append(0x80 | UInt8(scalar & 0x3F))
        default:
            scratch.append(0xF0 | UInt8(scalar >> 18))
            scratch.append(0x80 | UInt8(scalar >> 12 & 0x3F))
            scratch.append(0x80 | UInt8(scalar >> 6 & 0x3F))
            scratch.append(0x80 | UInt8(scalar & 0x3F))
        }
    }

    /// Checks the multi-byte UTF-8 sequence whose lead byte is at `index` against the well-formed
    /// table of Unicode §3.9 (D92); returns the index after it.
    private func validateUTF8Sequence(at index: Int) throws(ParseError) -> Int {
        let lead = input[index]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF           // no overlongs
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondRange = 0x80...0x9F           // no UTF-16 surrogates
        case 0xF0: length = 4; secondRange = 0x90...0xBF           // no overlongs
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F           // nothing above U+10FFFF
        default: throw ParseError(offset: index, reason: "invalid UTF-8 byte 0x\(String(lead, radix: 16, uppercase: true))")
        }
        guard index + length <= input.count, secondRange.contains(input[index + 1]) else {
            throw ParseError(offset: index, reason: "invalid UTF-8 sequence")
        }
        for position in index + 2..<index + length where input[position] & 0xC0 != 0x80 {
            throw ParseError(offset: index, reason: "invalid UTF-8 sequence")
        }
        return index + length
    }
}
