import Glibc

/// A statement whose interpolated values become `$n` parameters, never SQL text:
/// `"SELECT * FROM zones WHERE database_id = \(id)"` sends `... = $1` with `id` as a parameter.
///
/// Identifiers (schema names in tests, LISTEN channels) go through `\(identifier:)`, which quotes
/// them, and plan-shaping names through `\(name:)`, which admits only letters, digits and `_`;
/// there is no way to splice a raw string.
package struct SQL: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The text as UTF-8: statements are built by appending bytes (appending to a `String` a
    /// piece at a time cost more than the rest of a one-record write's statement).
    package private(set) var utf8: [UInt8]
    package internal(set) var parameters: [PGData]
    /// For a template (`SQL+Template.swift`): the parameters `binding(_:)` must supply.
    private(set) var templateParameterCount = 0

    package init(stringLiteral value: String) {
        utf8 = Array(value.utf8)
        parameters = []
    }

    package init(stringInterpolation: StringInterpolation) {
        utf8 = stringInterpolation.bytes
        parameters = stringInterpolation.parameters
        templateParameterCount = stringInterpolation.templateParameterCount
    }

    package var text: String { String(decoding: utf8, as: UTF8.self) }

    package var description: String { text }

    /// Appends another statement fragment, renumbering its parameters.
    package mutating func append(_ other: SQL) {
        other.appendText(renumberedFrom: parameters.count, to: &utf8)
        parameters += other.parameters
    }

    /// Appends the text with every placeholder `$1`…`$<count>` shifted by `offset`, in one pass
    /// over the bytes (whole placeholders only: the digits after a `$` are read as one number);
    /// the text between placeholders is copied a run at a time.
    fileprivate func appendText(renumberedFrom offset: Int, to output: inout [UInt8]) {
        guard offset > 0, !parameters.isEmpty else {
            output.append(contentsOf: utf8)
            return
        }
        let count = parameters.count
        utf8.withUnsafeBufferPointer { bytes in
            output.reserveCapacity(output.count + bytes.count + count * 2)
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
                Self.appendDecimal(number + offset, to: &output)
                runStart = end
                index = end
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
    }

    /// Appends a non-negative integer's decimal digits.
    fileprivate static func appendDecimal(_ value: Int, to output: inout [UInt8]) {
        var divisor = 1
        while divisor <= value / 10 { divisor *= 10 }
        var rest = value
        repeat {
            output.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest / divisor))
            rest %= divisor
            divisor /= 10
        } while divisor > 0
    }

    package struct StringInterpolation: StringInterpolationProtocol {
        var bytes: [UInt8] = []
        var parameters: [PGData] = []
        /// The highest `\(parameter:)` number written (templates only).
        var templateParameterCount = 0

        package init(literalCapacity: Int, interpolationCount: Int) {
            bytes.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        package mutating func appendLiteral(_ literal: String) {
            bytes.append(contentsOf: literal.utf8)
        }

        private mutating func appendPlaceholder() {
            bytes.append(UInt8(ascii: "$"))
            SQL.appendDecimal(parameters.count, to: &bytes)
        }

        package mutating func appendInterpolation(_ value: some PGEncodable) {
            precondition(templateParameterCount == 0, "a template takes its values through binding(_:)")
            parameters.append(value.pgData)
            appendPlaceholder()
        }

        /// An optional value: SQL NULL when nil.
        package mutating func appendInterpolation(_ value: (some PGEncodable)?) {
            precondition(templateParameterCount == 0, "a template takes its values through binding(_:)")
            parameters.append(value?.pgData ?? .null)
            appendPlaceholder()
        }

        /// Another statement fragment, its parameters renumbered into this one.
        package mutating func appendInterpolation(_ fragment: SQL) {
            fragment.appendText(renumberedFrom: parameters.count, to: &bytes)
            parameters += fragment.parameters
        }

        /// A fixed fragment of SQL text written in this code base (a column list shared by
        /// several statements). Never pass data through it: values go through `\(value)`.
        package mutating func appendInterpolation(unsafeColumns fragment: StaticString) {
            fragment.withUTF8Buffer { bytes.append(contentsOf: $0) }
        }

        /// A name as a string constant, for names that shape the plan: an expression index
        /// matches `fields->'timestamp'` only when the key is a constant, and a partial index on
        /// `record_type IN (...)` only when the type is. Only names of ASCII letters, digits and
        /// `_` (1–255, not starting with a digit) are written as constants; any other string
        /// becomes a parameter like any value, so nothing but such a name reaches the SQL text.
        package mutating func appendInterpolation(name: String) {
            if SQL.isPlainName(name) {
                bytes.append(UInt8(ascii: "'"))
                bytes.append(contentsOf: name.utf8)
                bytes.append(UInt8(ascii: "'"))
            } else {
                appendInterpolation(name)
            }
        }

        /// An integer written as a constant (a LIMIT the planner should know).
        package mutating func appendInterpolation(constant: Int64) {
            bytes.append(contentsOf: String(constant).utf8)
        }

        /// A quoted identifier (RFC-style doubling of embedded quotes), for names that cannot be
        /// parameters: schemas, channels.
        package mutating func appendInterpolation(identifier: String) {
            bytes.append(contentsOf: ("\"" + identifier.replacingAll("\"", with: "\"\"") + "\"").utf8)
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
