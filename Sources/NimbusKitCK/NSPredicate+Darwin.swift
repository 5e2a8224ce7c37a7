#if canImport(Darwin)
import Foundation

extension NSPredicate {
    /// Foundation's predicate as NimbusKit filters: `TRUEPREDICATE`, comparisons of a key with a
    /// constant (`< <= > >= == != IN BEGINSWITH`) and AND of those.
    func nimbusFilters() throws -> [Filter] {
        if predicateFormat == "TRUEPREDICATE" { return [] }
        if let compound = self as? NSCompoundPredicate, compound.compoundPredicateType == .and {
            return try compound.subpredicates.flatMap { item -> [Filter] in
                guard let predicate = item as? NSPredicate else { throw unsupported() }
                return try predicate.nimbusFilters()
            }
        }
        if let compound = self as? NSCompoundPredicate, compound.compoundPredicateType == .or {
            throw CKError(NimbusError(.invalidArguments, reason: "NSPredicate \"\(predicateFormat)\": Only AND compound predicates are allowed "
                + "(CloudKit refuses OR too). Run one query per alternative, or use key IN %@."))
        }
        guard let comparison = self as? NSComparisonPredicate,
              comparison.leftExpression.expressionType == .keyPath,
              comparison.rightExpression.expressionType == .constantValue,
              let constant = comparison.rightExpression.constantValue,
              let value = PredicateParser.value(constant, placeholder: "%@") else { throw unsupported() }
        let comparator: Filter.Comparator
        switch comparison.predicateOperatorType {
        case .lessThan: comparator = .lessThan
        case .lessThanOrEqualTo: comparator = .lessThanOrEquals
        case .greaterThan: comparator = .greaterThan
        case .greaterThanOrEqualTo: comparator = .greaterThanOrEquals
        case .equalTo: comparator = .equals
        case .notEqualTo: comparator = .notEquals
        case .in: comparator = .in
        case .beginsWith: comparator = .beginsWith
        default: throw unsupported()
        }
        return [PredicateParser.widening(Filter(comparison.leftExpression.keyPath, comparator, value))]
    }

    private func unsupported() -> CKError {
        CKError(NimbusError(.invalidArguments, reason: "NSPredicate \"\(predicateFormat)\" is outside what NimbusKitCK supports "
            + "(key OP constant with < <= > >= == != IN BEGINSWITH, AND); use CKQuery.filters."))
    }
}
#endif
