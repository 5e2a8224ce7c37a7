/// A statement whose interpolated values become `$n` parameters, never SQL text:
/// `"SELECT * FROM zones WHERE database_id = \(id)"` sends `... = $1` with `id` as a parameter.
///
/// Identifiers (schema names in tests, LISTEN channels) go through `\(identifier:)`, which quotes
/// them; there is no way to splice a raw string.
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
        var renumbered = other.text
        if !other.parameters.isEmpty {
            // Replace $n from the highest index down so "$1" does not clobber "$10".
            for index in stride(from: other.parameters.count, through: 1, by: -1) {
                renumbered = renumbered.replacingPlaceholder(index, with: index + parameters.count)
            }
        }
        text += renumbered
        parameters += other.parameters
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
