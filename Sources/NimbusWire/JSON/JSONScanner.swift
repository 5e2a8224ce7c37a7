#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads one JSON document front to back without building it, for request bodies of a known
/// shape: the caller asks for what it expects next (an object, its next key, a string, any value)
/// and each read throws where the document is not that. It applies the rules and limits of
/// `JSONValue.parse` (the same parser underneath): a document the scanner reads to its end
/// parses, and every value it returns is the value the parse would hold there. Duplicate keys
/// are the caller's to refuse (it knows which keys it has seen).
package struct JSONScanner {
    private var parser: JSONParser

    private init(parser: JSONParser) {
        self.parser = parser
    }

    /// Runs `read` over `bytes`; whatever it returns is the result once the document has ended
    /// (only whitespace after it). Any throw — a misread, or the caller's own — makes it nil.
    package static func scan<Result>(_ bytes: [UInt8], limits: JSONValue.ParseLimits = .init(),
                                     _ read: (inout JSONScanner) throws -> Result) -> Result? {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = JSONScanner(parser: JSONParser(input: buffer, limits: limits))
            guard let result = try? read(&scanner), (try? scanner.end()) != nil else { return nil }
            return result
        }
    }

    private func failure(_ reason: String) -> JSONValue.ParseError {
        JSONValue.ParseError(offset: parser.offset, reason: reason)
    }

    /// Whether the next byte (after whitespace) is `byte`; consumes it if so.
    private mutating func take(_ byte: UInt8) -> Bool {
        parser.skipWhitespace()
        guard parser.offset < parser.input.count, parser.input[parser.offset] == byte else { return false }
        parser.offset += 1
        return true
    }

    /// `{`: an object starts.
    package mutating func beginObject() throws(JSONValue.ParseError) {
        parser.skipWhitespace()
        guard take(UInt8(ascii: "{")) else { throw failure("expected an object") }
        try parser.enterContainer()
    }

    /// The object's next key (its `:` read), or nil at its `}`. `first`: no member read yet
    /// (the caller's, set to true at `beginObject`).
    package mutating func nextKey(first: inout Bool) throws(JSONValue.ParseError) -> String? {
        guard try atKey(first: &first) else { return nil }
        let key = try parser.parseString()
        try takeColon()
        return key
    }

    /// The object's next key as its index in `keys`, or nil at its `}`; a key not among them
    /// throws. A key without escapes is compared where it lies, without making a `String`.
    package mutating func nextKey(first: inout Bool, among keys: [StaticString]) throws(JSONValue.ParseError) -> Int? {
        guard try atKey(first: &first) else { return nil }
        let index: Int?
        if let plain = plainMatch(among: keys) {
            index = plain
        } else {
            // Escapes, other bytes or no match: the parser reads (and checks) the key.
            let key = try parser.parseString()
            index = keys.firstIndex { candidate in candidate.withUTF8Buffer { $0.elementsEqual(key.utf8) } }
        }
        guard let index else { throw failure("unexpected key") }
        try takeColon()
        return index
    }

    /// An object key: its index among the keys a reader knows, or the key itself.
    package enum Key: Equatable {
        case known(Int)
        case other(String)
    }

    /// The object's next key (its `:` read), or nil at its `}`: `.known` with its index in
    /// `keys`, else `.other` with the key. For readers that take any document and skip what
    /// they do not know (they refuse duplicates themselves, as the parser does).
    package mutating func nextMember(first: inout Bool, among keys: [StaticString]) throws(JSONValue.ParseError) -> Key? {
        guard try atKey(first: &first) else { return nil }
        let found: Key
        if let plain = plainMatch(among: keys) {
            found = .known(plain)
        } else {
            let key = try parser.parseString()
            if let index = keys.firstIndex(where: { candidate in candidate.withUTF8Buffer { $0.elementsEqual(key.utf8) } }) {
                found = .known(index)
            } else {
                found = .other(key)
            }
        }
        try takeColon()
        return found
    }

    /// The first byte of the next value (after whitespace), reading nothing; nil at the end.
    package mutating func peek() -> UInt8? {
        parser.skipWhitespace()
        return parser.offset < parser.input.count ? parser.input[parser.offset] : nil
    }

    /// A string value that is one of `candidates`, as its index; nil, reading nothing, when the
    /// next value is not a string spelled exactly as one of them without escapes (then read it
    /// with `string()`). For values of a few known spellings (field types): no `String` made.
    package mutating func string(among candidates: [StaticString]) -> Int? {
        parser.skipWhitespace()
        guard parser.offset < parser.input.count, parser.input[parser.offset] == UInt8(ascii: "\"") else { return nil }
        return plainMatch(among: candidates)
    }

    /// At an opening quote: the index of the candidate the string spells, when it is plain
    /// ASCII without escapes, leaving the offset after its closing quote; otherwise nil and the
    /// offset where it was. The run is found eight bytes at a time (`JSONEscape.plainRun`).
    private mutating func plainMatch(among candidates: [StaticString]) -> Int? {
        let input = parser.input
        let start = parser.offset + 1
        var end = JSONEscape.plainRun(UnsafeRawBufferPointer(input), from: start, asciiOnly: true)
        while end < input.count, input[end] >= 0x20, input[end] < 0x80, input[end] != UInt8(ascii: "\""), input[end] != UInt8(ascii: "\\") {
            end += 1
        }
        guard end < input.count, input[end] == UInt8(ascii: "\""), let base = input.baseAddress else { return nil }
        let length = end - start
        guard let index = candidates.firstIndex(where: { candidate in
            candidate.utf8CodeUnitCount == length && (length == 0 || memcmp(candidate.utf8Start, base + start, length) == 0)
        }) else { return nil }
        parser.offset = end + 1
        return index
    }

    /// Moves to the next key's opening quote (past a `,` unless `first`); false at the `}`.
    private mutating func atKey(first: inout Bool) throws(JSONValue.ParseError) -> Bool {
        if take(UInt8(ascii: "}")) {
            parser.depth -= 1
            return false
        }
        if !first, !take(UInt8(ascii: ",")) { throw failure("expected ',' or '}'") }
        first = false
        parser.skipWhitespace()
        guard parser.offset < parser.input.count, parser.input[parser.offset] == UInt8(ascii: "\"") else {
            throw failure("expected a key")
        }
        return true
    }

    private mutating func takeColon() throws(JSONValue.ParseError) {
        guard take(UInt8(ascii: ":")) else { throw failure("expected ':'") }
    }

    /// `[`: an array starts.
    package mutating func beginArray() throws(JSONValue.ParseError) {
        parser.skipWhitespace()
        guard take(UInt8(ascii: "[")) else { throw failure("expected an array") }
        try parser.enterContainer()
    }

    /// Whether the array has another element (its `,` read), false at its `]`.
    package mutating func nextElement(first: inout Bool) throws(JSONValue.ParseError) -> Bool {
        if take(UInt8(ascii: "]")) {
            parser.depth -= 1
            return false
        }
        if !first, !take(UInt8(ascii: ",")) { throw failure("expected ',' or ']'") }
        first = false
        return true
    }

    /// A string value.
    package mutating func string() throws(JSONValue.ParseError) -> String {
        parser.skipWhitespace()
        guard parser.offset < parser.input.count, parser.input[parser.offset] == UInt8(ascii: "\"") else {
            throw failure("expected a string")
        }
        return try parser.parseString()
    }

    /// Any value, built as `JSONValue.parse` builds it.
    package mutating func value() throws(JSONValue.ParseError) -> JSONValue {
        parser.skipWhitespace()
        return try parser.parseValue()
    }

    /// Only whitespace is left.
    private mutating func end() throws(JSONValue.ParseError) {
        parser.skipWhitespace()
        guard parser.offset == parser.input.count, parser.depth == 0 else { throw failure("expected the end of the document") }
    }
}
