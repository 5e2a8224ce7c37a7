/// A recursive-descent JSON parser over bytes (RFC 8259). One instance parses one document.
///
/// Unsafe invariant: `input` is valid for the parser's whole life — it is created and dropped
/// inside the `with…` scope that lends the buffer (`JSONValue.parse`). Every read is at an index
/// first checked against `input.count`.
struct JSONParser {
    typealias ParseError = JSONValue.ParseError

    let input: UnsafeBufferPointer<UInt8>
    let limits: JSONValue.ParseLimits
    var offset = 0
    var depth = 0
    /// Reused for strings that contain escapes; strings without escapes are built straight from
    /// the input.
    var scratch: [UInt8] = []
    /// The elements and members of every open container, innermost last. Each container takes
    /// its own off the top when it closes, so its array is allocated once at its final size
    /// instead of growing through appends.
    private var elementStack: [JSONValue] = []
    private var memberStack: [JSONObject.Member] = []

    init(input: UnsafeBufferPointer<UInt8>, limits: JSONValue.ParseLimits) {
        self.input = input
        self.limits = limits
    }

    mutating func parseDocument() throws(ParseError) -> JSONValue {
        skipWhitespace()
        guard offset < input.count else {
            throw ParseError(offset: offset, reason: input.isEmpty ? "empty input" : "expected a value, found only whitespace")
        }
        let value = try parseValue()
        skipWhitespace()
        guard offset == input.count else {
            throw ParseError(offset: offset, reason: "unexpected \(describeByte(at: offset)) after the value")
        }
        return value
    }

    // MARK: Values

    /// Parses the value starting at `offset`, which the caller has moved past whitespace.
    mutating func parseValue() throws(ParseError) -> JSONValue {
        guard offset < input.count else {
            throw ParseError(offset: offset, reason: "unexpected end of input, expected a value")
        }
        switch input[offset] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        default:
            throw ParseError(offset: offset, reason: "expected a value, found \(describeByte(at: offset))")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(ParseError) {
        let count = literal.utf8CodeUnitCount
        let matches = input.count - offset >= count && literal.withUTF8Buffer { expected in
            (0..<count).allSatisfy { input[offset + $0] == expected[$0] }
        }
        guard matches else {
            throw ParseError(offset: offset, reason: "invalid literal, expected '\(literal)'")
        }
        offset += count
    }

    mutating func enterContainer() throws(ParseError) {
        guard depth < limits.maxDepth else {
            throw ParseError(offset: offset, reason: "nesting deeper than \(limits.maxDepth) levels")
        }
        depth += 1
    }

    private mutating func parseArray() throws(ParseError) -> JSONValue {
        try enterContainer()
        offset += 1
        skipWhitespace()
        if offset < input.count, input[offset] == UInt8(ascii: "]") {
            offset += 1
            depth -= 1
            return .array([])
        }
        let base = elementStack.count
        while true {
            let element = try parseValue()
            elementStack.append(element)
            skipWhitespace()
            guard offset < input.count else {
                throw ParseError(offset: offset, reason: "unexpected end of input in an array")
            }
            switch input[offset] {
            case UInt8(ascii: ","):
                offset += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                offset += 1
                depth -= 1
                let elements = Array(elementStack[base...])
                elementStack.removeSubrange(base...)
                return .array(elements)
            default:
                throw ParseError(offset: offset, reason: "expected ',' or ']' after an array element")
            }
        }
    }

    private mutating func parseObject() throws(ParseError) -> JSONValue {
        try enterContainer()
        offset += 1
        skipWhitespace()
        if offset < input.count, input[offset] == UInt8(ascii: "}") {
            offset += 1
            depth -= 1
            return .object(JSONObject())
        }
        let base = memberStack.count
        // Key → position within this object, built once the object outgrows linear search.
        var positions: [String: Int]?
        while true {
            guard offset < input.count else {
                throw ParseError(offset: offset, reason: "unexpected end of input, expected an object key")
            }
            guard input[offset] == UInt8(ascii: "\"") else {
                throw ParseError(offset: offset, reason: "expected a string key, found \(describeByte(at: offset))")
            }
            let keyOffset = offset
            let key = try parseString()
            let isDuplicate = if let positions {
                positions[key] != nil
            } else {
                memberStack[base...].contains { $0.key == key }
            }
            guard !isDuplicate else {
                throw ParseError(offset: keyOffset, reason: "duplicate key \(Self.quoted(key))")
            }
            skipWhitespace()
            guard offset < input.count, input[offset] == UInt8(ascii: ":") else {
                throw ParseError(offset: offset, reason: "expected ':' after an object key")
            }
            offset += 1
            skipWhitespace()
            let value = try parseValue()
            memberStack.append(JSONObject.Member(key: key, value: value))
            let count = memberStack.count - base
            if positions != nil {
                positions![key] = count - 1
            } else if count > JSONObject.indexThreshold {
                positions = Dictionary(uniqueKeysWithValues: memberStack[base...].enumerated().map { ($1.key, $0) })
            }
            skipWhitespace()
            guard offset < input.count else {
                throw ParseError(offset: offset, reason: "unexpected end of input in an object")
            }
            switch input[offset] {
            case UInt8(ascii: ","):
                offset += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                offset += 1
                depth -= 1
                let members = Array(memberStack[base...])
                memberStack.removeSubrange(base...)
                return .object(JSONObject(uniqueMembers: members, positions: positions))
            default:
                throw ParseError(offset: offset, reason: "expected ',' or '}' after an object member")
            }
        }
    }

    // MARK: Whitespace and diagnostics

    /// RFC 8259 §2: whitespace is space, tab, line feed and carriage return, nothing else.
    @inline(__always)
    mutating func skipWhitespace() {
        while offset < input.count {
            switch input[offset] {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): offset += 1
            default: return
            }
        }
    }

    func describeByte(at index: Int) -> String {
        let byte = input[index]
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        let hex = String(byte, radix: 16, uppercase: true)
        return "byte 0x\(hex.count == 1 ? "0" : "")\(hex)"
    }

    /// A key for an error message: quoted, cut short, control characters escaped.
    static func quoted(_ key: String) -> String {
        let shown = key.count > 40 ? key.prefix(40) + "…" : Substring(key)
        return String(decoding: JSONValue.string(String(shown)).serialized(), as: UTF8.self)
    }
}
