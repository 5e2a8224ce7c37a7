import Foundation

/// Parses the predicate format subset the apps use into NimbusKit filters.
struct PredicateParser {
    private var tokens: [Token]
    private var position = 0
    private var arguments: [Any]
    private var argumentIndex = 0
    private let format: String

    enum Token: Equatable {
        case word(String), placeholder(String), string(String), number(String), symbol(String)
    }

    init(format: String, arguments: [Any]) throws {
        self.format = format
        self.arguments = arguments
        tokens = try PredicateParser.tokenize(format)
    }

    mutating func parse() throws -> [Filter] {
        if tokens == [.word("TRUEPREDICATE")] { return [] }
        let filters = try conjunction()
        if position < tokens.count { throw failure("unexpected \(tokens[position])") }
        guard argumentIndex == arguments.count else { throw failure("\(arguments.count) arguments for \(argumentIndex) placeholders") }
        return filters.map(PredicateParser.widening)
    }

    /// Comparisons joined by AND. CloudKit allows only AND compound predicates (CKQuery.h:
    /// "Only AND compound predicates are allowed."): OR is refused with that rule, as CloudKit does.
    private mutating func conjunction() throws -> [Filter] {
        var filters = try term()
        while position < tokens.count {
            if tokens[position] == .word("OR") || tokens[position] == .symbol("||") { throw orRefusal() }
            guard tokens[position] == .word("AND") || tokens[position] == .symbol("&&") else { break }
            position += 1
            filters += try term()
        }
        return filters
    }

    /// One comparison, or a parenthesized conjunction.
    private mutating func term() throws -> [Filter] {
        if accept(.symbol("(")) {
            let inner = try conjunction()
            guard accept(.symbol(")")) else { throw failure("a ( is not closed") }
            return inner
        }
        return [try comparison()]
    }

    private mutating func comparison() throws -> Filter {
        if accept(.word("NOT")) {
            // NOT (key IN %@) and NOT key IN %@: NOT_IN.
            let parenthesized = accept(.symbol("("))
            let inner = try comparison()
            if parenthesized { guard accept(.symbol(")")) else { throw failure("a ( is not closed") } }
            guard inner.comparator == .in else { throw failure("NOT only negates IN") }
            return Filter(inner.fieldName, .notIn, inner.value)
        }
        if accept(.word("ANY")) {
            // ANY listField == value: the list contains the value.
            let key = try keyOperand()
            guard accept(.symbol("==")) || accept(.symbol("=")) else { throw failure("ANY supports only ==") }
            return Filter(key, .listContains, try valueOperand())
        }
        if tokens.count > position + 1, tokens[position] == .word("self") || tokens[position] == .word("SELF"),
           tokens[position + 1] == .word("CONTAINS") {
            throw NimbusError(.invalidArguments, reason: "NSPredicate \"\(format)\": self CONTAINS is CloudKit's full-text token search, "
                + "which the Nimbus server does not have (its comparators: docs/api.md). Keep the words in a STRING_LIST field "
                + "(record[\"tokens\"] = record.allTokens()) and query tokens CONTAINS %@.")
        }
        let key = try keyOperand()
        guard position < tokens.count else { throw failure("a comparison ends after \(key)") }
        let comparator: Filter.Comparator
        switch tokens[position] {
        case .symbol("<"): comparator = .lessThan
        case .symbol("<="), .symbol("=<"): comparator = .lessThanOrEquals
        case .symbol(">"): comparator = .greaterThan
        case .symbol(">="), .symbol("=>"): comparator = .greaterThanOrEquals
        case .symbol("=="), .symbol("="): comparator = .equals
        case .symbol("!="), .symbol("<>"): comparator = .notEquals
        case .word("IN"): comparator = .in
        case .word("BEGINSWITH"): comparator = .beginsWith
        case .word("CONTAINS"): comparator = .listContains
        case .word("OR"), .symbol("||"): throw orRefusal()
        default: throw failure("unsupported operator \(tokens[position])")
        }
        position += 1
        let value = try valueOperand()
        if comparator == .in {
            guard case .list = value else { throw failure("IN needs a list argument") }
        }
        return Filter(key, comparator, value)
    }

    private mutating func accept(_ token: Token) -> Bool {
        guard position < tokens.count, tokens[position] == token else { return false }
        position += 1
        return true
    }

    private mutating func keyOperand() throws -> String {
        guard position < tokens.count else { throw failure("a key is missing") }
        defer { position += 1 }
        switch tokens[position] {
        case .word(let key): return key
        case .placeholder("%K"):
            guard let key = nextArgument() as? String else { throw failure("%K needs a string argument") }
            return key
        default: throw failure("a comparison must start with a key, not \(tokens[position])")
        }
    }

    private mutating func valueOperand() throws -> RecordValue {
        guard position < tokens.count else { throw failure("a value is missing") }
        defer { position += 1 }
        switch tokens[position] {
        case .string(let text): return .string(text)
        case .number(let text):
            if let int = Int64(text) { return .int64(int) }
            if let double = Double(text) { return .double(double) }
            throw failure("\(text) is not a number")
        case .placeholder(let kind):
            guard let argument = nextArgument() else { throw failure("too few arguments") }
            guard let value = PredicateParser.value(argument, placeholder: kind) else {
                throw failure("argument \(argumentIndex) (\(type(of: argument))) does not fit \(kind)")
            }
            return value
        default: throw failure("expected a value, found \(tokens[position])")
        }
    }

    private mutating func nextArgument() -> Any? {
        guard argumentIndex < arguments.count else { return nil }
        defer { argumentIndex += 1 }
        return arguments[argumentIndex]
    }

    static func value(_ argument: Any, placeholder: String) -> RecordValue? {
        switch (placeholder, argument) {
        case ("%@", let v as CKRecord.Reference): return .reference(Reference(recordID: v.recordID.nimbus))
        case ("%@", let v as CKRecord.ID): return .string(v.recordName)
        case ("%@", let v as NSString): return .string(v as String)
        case ("%@", let v as NSDate): return .date(Date(timeIntervalSinceReferenceDate: v.timeIntervalSinceReferenceDate))
        case ("%@", let v as NSNumber):
            let kind = String(cString: v.objCType)
            return kind == "d" || kind == "f" ? .double(v.doubleValue) : .int64(v.int64Value)
        case ("%@", let v as [Any]):
            var values = v.compactMap { value($0, placeholder: "%@") }
            guard values.count == v.count else { return nil }
            // Integers among fractions: a DOUBLE list, as the server types a mixed JSON list.
            if values.contains(where: { $0.fieldType == .double }), values.allSatisfy({ $0.fieldType == .double || $0.fieldType == .int64 }) {
                values = values.map { $0.int64Value.map { .double(Double($0)) } ?? $0 }
            }
            return .list(values, elementType: values.first?.fieldType ?? .string)
        case ("%@", let v as any RecordValueConvertible): return v.recordValue
        case ("%d", let v as any BinaryInteger), ("%i", let v as any BinaryInteger), ("%ld", let v as any BinaryInteger):
            return .int64(Int64(v))
        case ("%f", let v as Double): return .double(v)
        case ("%f", let v as Float): return .double(Double(v))
        default: return nil
        }
    }

    /// An integer argument goes without its type: the server types it from the field's schema, so
    /// it is compared with a DOUBLE field as a DOUBLE (CloudKit compares an integer NSNumber with
    /// one). Against a TIMESTAMP field it is taken as milliseconds since 1970.
    static func widening(_ filter: Filter) -> Filter {
        var filter = filter
        switch filter.value {
        case .int64: filter.typedBySchema = true
        case .list(let values, _): filter.typedBySchema = !values.isEmpty && values.allSatisfy { $0.fieldType == .int64 }
        default: break
        }
        return filter
    }

    private func orRefusal() -> NimbusError {
        NimbusError(.invalidArguments, reason: "NSPredicate \"\(format)\": Only AND compound predicates are allowed "
            + "(CloudKit refuses OR in a query or subscription too). Run one query per alternative, or for "
            + "alternatives of one field use key IN %@.")
    }

    private func failure(_ what: String) -> NimbusError {
        NimbusError(.invalidArguments, reason: "NSPredicate \"\(format)\": \(what). NimbusKitCK supports key OP %@ "
            + "(< <= > >= == !=), IN, NOT (k IN %@), BEGINSWITH, CONTAINS and ANY k == %@ on lists, "
            + "parentheses and AND (as CloudKit, no OR); use CKQuery.filters for anything else.")
    }

    static func tokenize(_ format: String) throws -> [Token] {
        var tokens: [Token] = []
        let characters = Array(format)
        var i = 0
        while i < characters.count {
            let c = characters[i]
            if c.isWhitespace { i += 1; continue }
            if c == "%" {
                // %@ %K %d %i %f, or %ld
                let length = i + 2 < characters.count && characters[i + 1] == "l" ? 3 : 2
                guard i + length <= characters.count else {
                    throw NimbusError(.invalidArguments, reason: "NSPredicate \"\(format)\": a placeholder is cut off")
                }
                tokens.append(.placeholder(String(characters[i..<i + length])))
                i += length
            } else if c == "'" || c == "\"" {
                var j = i + 1
                var text = ""
                while j < characters.count && characters[j] != c {
                    if characters[j] == "\\" && j + 1 < characters.count { j += 1 }
                    text.append(characters[j])
                    j += 1
                }
                guard j < characters.count else {
                    throw NimbusError(.invalidArguments, reason: "NSPredicate \"\(format)\": an unterminated string")
                }
                tokens.append(.string(text))
                i = j + 1
            } else if c.isNumber || (c == "-" && i + 1 < characters.count && characters[i + 1].isNumber) {
                var j = i + 1
                while j < characters.count && (characters[j].isNumber || characters[j] == ".") { j += 1 }
                tokens.append(.number(String(characters[i..<j])))
                i = j
            } else if c.isLetter || c == "_" {
                var j = i
                while j < characters.count && (characters[j].isLetter || characters[j].isNumber || characters[j] == "_") { j += 1 }
                let word = String(characters[i..<j])
                let upper = word.uppercased()
                tokens.append(["AND", "OR", "IN", "BEGINSWITH", "TRUEPREDICATE", "NOT", "ANY", "CONTAINS"].contains(upper) ? .word(upper) : .word(word))
                i = j
            } else if c == "(" || c == ")" {
                tokens.append(.symbol(String(c)))
                i += 1
            } else {
                var j = i
                while j < characters.count && "<>=!&|".contains(characters[j]) { j += 1 }
                guard j > i else { throw NimbusError(.invalidArguments, reason: "NSPredicate \"\(format)\": unexpected \"\(c)\"") }
                tokens.append(.symbol(String(characters[i..<j])))
                i = j
            }
        }
        return tokens
    }
}
