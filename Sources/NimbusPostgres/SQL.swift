import Glibc

/// A statement whose interpolated values become `$n` parameters, never SQL text:
/// `"SELECT * FROM zones WHERE database_id = \(id)"` sends `... = $1` with `id` as a parameter.
///
/// Identifiers (schema names in tests, LISTEN channels) go through `\(identifier:)`, which quotes
/// them, and plan-shaping names through `\(name:)`, which admits only letters, digits and `_`;
/// there is no way to splice a raw string.
package struct SQL: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    package private(set) var text: String
    package private(set) var parameters: [PGData]

    package init(stringLiteral value: String) {
        text = value
        parameters = []
    }

    package init(stringInterpolation: StringInterpolation) {
        text = stringInterpolation.text
        parameters = stringInterpolation.parameters
    }

    package var description: String { text }

    /// Appends another statement fragment, renumbering its parameters.
    package mutating func append(_ other: SQL) {
        text += other.text(renumberedFrom: parameters.count)
        parameters += other.parameters
    }

    /// The text with every placeholder `$1`…`$<count>` shifted by `offset`, in one pass over the
    /// bytes (whole placeholders only: the digits after a `$` are read as one number); the text
    /// between placeholders is copied a run at a time.
    fileprivate func text(renumberedFrom offset: Int) -> String {
        guard offset > 0, !parameters.isEmpty else { return text }
        var output: [UInt8] = []
        var source = text
        let count = parameters.count
        source.withUTF8 { bytes in
            output.reserveCapacity(bytes.count + count * 2)
            guard let base = bytes.baseAddress else { return }
            var runStart = 0, index = 0
            // memchr finds each `$`: statements are kilobytes of text with a few dozen placeholders.
            while index < bytes.count, let found = memchr(base + index, Int32(UInt8(ascii: "$")), bytes.count - index) {
                let digits = base.distance(to: found.assumingMemoryBound(to: UInt8.self)) + 1
                var number = 0, end = digits
                while end < bytes.count, bytes[end] >= UInt8(ascii: "0"), bytes[end] <= UInt8(ascii: "9"), number <= count {
                    number = number * 10 + Int(bytes[end] - UInt8(ascii: "0"))
                    end += 1
                }
                guard end > digits, end == bytes.count || !(bytes[end] >= UInt8(ascii: "0") && bytes[end] <= UInt8(ascii: "9")),
                      (1...count).contains(number) else {
                    index = digits
                    continue
                }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<digits]))
                output.append(contentsOf: String(number + offset).utf8)
                runStart = end
                index = end
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        return String(decoding: output, as: UTF8.self)
    }

    package struct StringInterpolation: StringInterpolationProtocol {
        var text = ""
        var parameters: [PGData] = []

        package init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        package mutating func appendLiteral(_ literal: String) {
            text += literal
        }

        package mutating func appendInterpolation(_ value: some PGEncodable) {
            parameters.append(value.pgData)
            text += "$\(parameters.count)"
        }

        /// An optional value: SQL NULL when nil.
        package mutating func appendInterpolation(_ value: (some PGEncodable)?) {
            parameters.append(value?.pgData ?? .null)
            text += "$\(parameters.count)"
        }

        /// Another statement fragment, its parameters renumbered into this one.
        package mutating func appendInterpolation(_ fragment: SQL) {
            text += fragment.text(renumberedFrom: parameters.count)
            parameters += fragment.parameters
        }

        /// A fixed fragment of SQL text written in this code base (a column list shared by
        /// several statements). Never pass data through it: values go through `\(value)`.
        package mutating func appendInterpolation(unsafeColumns fragment: StaticString) {
            text += fragment.description
        }

        /// A name as a string constant, for names that shape the plan: an expression index
        /// matches `fields->'timestamp'` only when the key is a constant, and a partial index on
        /// `record_type IN (...)` only when the type is. Only names of ASCII letters, digits and
        /// `_` (1–255, not starting with a digit) are written as constants; any other string
        /// becomes a parameter like any value, so nothing but such a name reaches the SQL text.
        package mutating func appendInterpolation(name: String) {
            if SQL.isPlainName(name) {
                text += "'" + name + "'"
            } else {
                appendInterpolation(name)
            }
        }

        /// An integer written as a constant (a LIMIT the planner should know).
        package mutating func appendInterpolation(constant: Int64) {
            text += String(constant)
        }

        /// A quoted identifier (RFC-style doubling of embedded quotes), for names that cannot be
        /// parameters: schemas, channels.
        package mutating func appendInterpolation(identifier: String) {
            text += "\"" + identifier.replacingAll("\"", with: "\"\"") + "\""
        }
    }
}

extension SQL {
    /// ASCII letters, digits and `_`, 1–255 bytes, not starting with a digit.
    static func isPlainName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= 255, !(first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")) else { return false }
        return bytes.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
        }
    }
}

extension String {
    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
