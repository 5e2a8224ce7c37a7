/// A JSON value (RFC 8259) as it was written: integers stay integers, object members keep their
/// document order, and every value survives `parse(serialized())` unchanged.
///
/// Equality is structural and strict about the case: `.integer(1) != .double(1.0)`, and two
/// objects are equal only with the same members in the same order. Strings compare as Swift
/// strings do (canonical equivalence).
package enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number written without fraction or exponent that fits `Int64`.
    case integer(Int64)
    /// Any other number: written with a fraction or an exponent, or an integer too large for `Int64`.
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
}

extension JSONValue {
    /// Whether a string or member name anywhere inside contains U+0000, which PostgreSQL's text
    /// and jsonb cannot hold (values kept as sent must be refused before they reach the database).
    package var containsNUL: Bool {
        switch self {
        case .string(let text): text.containsNUL
        case .array(let values): values.contains { $0.containsNUL }
        case .object(let object): object.contains { $0.key.containsNUL || $0.value.containsNUL }
        case .null, .bool, .integer, .double: false
        }
    }

    package var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    package var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The value of an `.integer`; `nil` for every other case, doubles with integral values included.
    package var int64Value: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The value of a `.double`, or of an `.integer` converted (rounded beyond 2^53).
    package var doubleValue: Double? {
        switch self {
        case .double(let value): return value
        case .integer(let value): return Double(value)
        default: return nil
        }
    }

    package var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    package var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    package var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The member named `key` of an object; `nil` when absent or when this is not an object.
    package subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }
}

// Literals keep tests and hand-built responses readable. There is deliberately no nil literal:
// `object["key"] = nil` must keep meaning "remove".
extension JSONValue: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(integerLiteral value: Int64) { self = .integer(value) }
    package init(floatLiteral value: Double) { self = .double(value) }
    package init(stringLiteral value: String) { self = .string(value) }
    package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }

    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(literal: elements))
    }
}
