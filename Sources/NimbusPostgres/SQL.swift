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

    /// The text with `$n` shifted by `offset`. Replaces from the highest index down so that "$1"
    /// does not clobber "$10".
    fileprivate func text(renumberedFrom offset: Int) -> String {
        guard offset > 0, !parameters.isEmpty else { return text }
        var renumbered = text
        for index in stride(from: parameters.count, through: 1, by: -1) {
            renumbered = renumbered.replacingPlaceholder(index, with: index + offset)
        }
        return renumbered
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
    fileprivate func replacingPlaceholder(_ index: Int, with newIndex: Int) -> String {
        var result = ""
        var rest = Substring(self)
        let token = "$\(index)"
        while let range = rest.range(of: token) {
            let after = rest[range.upperBound...]
            // Only a whole placeholder: "$1" but not the "$1" prefix of "$12".
            if let next = after.first, next.isASCII, next.isNumber {
                result += rest[..<range.upperBound]
                rest = after
                continue
            }
            result += rest[..<range.lowerBound] + "$\(newIndex)"
            rest = after
        }
        return result + rest
    }

    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
