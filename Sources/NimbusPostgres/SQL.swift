/// A statement whose interpolated values become `$n` parameters, never SQL text:
/// `"SELECT * FROM zones WHERE database_id = \(id)"` sends `... = $1` with `id` as a parameter.
///
/// Identifiers (schema names in tests, LISTEN channels) go through `\(identifier:)`, which quotes
/// them; there is no way to splice a raw string.
package struct SQL: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    package private(set) var text: String
    package private(set) var parameters: [PGData]
    /// Whether the connection may prepare this statement once and reuse it. Statements built
    /// dynamically whose plans depend on parameter values (expression-index matching on a
    /// parameter) should run unprepared, so that each execution is planned with its values.
    package var preparable = true

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
        preparable = preparable && other.preparable
    }

    /// The text with every placeholder `$1`…`$<count>` shifted by `offset`, in one pass over the
    /// bytes (whole placeholders only: the digits after a `$` are read as one number).
    fileprivate func text(renumberedFrom offset: Int) -> String {
        guard offset > 0, !parameters.isEmpty else { return text }
        var output: [UInt8] = []
        var source = text
        source.withUTF8 { bytes in
            output.reserveCapacity(bytes.count + parameters.count * 2)
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                output.append(byte)
                guard byte == UInt8(ascii: "$") else { continue }
                var number = 0, end = index
                while end < bytes.count, bytes[end] >= UInt8(ascii: "0"), bytes[end] <= UInt8(ascii: "9"), number <= parameters.count {
                    number = number * 10 + Int(bytes[end] - UInt8(ascii: "0"))
                    end += 1
                }
                guard end > index, end == bytes.count || !(bytes[end] >= UInt8(ascii: "0") && bytes[end] <= UInt8(ascii: "9")),
                      (1...parameters.count).contains(number) else { continue }
                output.append(contentsOf: String(number + offset).utf8)
                index = end
            }
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

        /// A quoted identifier (RFC-style doubling of embedded quotes), for names that cannot be
        /// parameters: schemas, channels.
        package mutating func appendInterpolation(identifier: String) {
            text += "\"" + identifier.replacingAll("\"", with: "\"\"") + "\""
        }
    }
}

extension String {
    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
