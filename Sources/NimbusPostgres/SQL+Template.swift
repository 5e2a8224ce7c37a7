/// Statement templates: text built once, values bound per execution. For statements run so
/// often that building their text from pieces shows (a one-record create spent a tenth of its
/// instructions there): the template is written like any statement, with `\(parameter: n)` where
/// the n-th value goes, and `binding(_:)` supplies the values in that order. Nothing but literals,
/// code constants and placeholders reaches the text; a template takes no interpolated values.
extension SQL {
    /// The template with its values: exactly as many as its highest `\(parameter:)` number.
    package func binding(_ values: [PGData]) -> SQL {
        precondition(parameters.isEmpty && values.count == templateParameterCount && templateParameterCount > 0,
                     "a template binds exactly its \(templateParameterCount) parameters")
        var bound = self
        bound.parameters = values
        return bound
    }
}

extension SQL.StringInterpolation {
    /// `$n`: the template's n-th parameter (1-based), which may appear more than once.
    package mutating func appendInterpolation(parameter number: Int) {
        precondition(number >= 1 && parameters.isEmpty, "template parameters are numbered from 1, in a statement without values")
        bytes.append(UInt8(ascii: "$"))
        bytes.append(contentsOf: String(number).utf8)
        templateParameterCount = max(templateParameterCount, number)
    }
}
