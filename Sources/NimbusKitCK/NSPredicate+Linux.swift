#if !canImport(Darwin)
import Foundation

/// On Linux, Foundation's `NSPredicate(format:)` and `NSSortDescriptor(key:ascending:)` do not
/// exist. These declarations shadow Foundation's for code that imports NimbusKitCK, so the apps'
/// CloudKit lines compile unchanged. The format subset: `key < %@` (and `<= > >= == = != <>`),
/// `key IN %@`, `NOT (key IN %@)`, `key BEGINSWITH %@`, `list CONTAINS %@`, `ANY list == %@`, parentheses,
/// `AND` / `&&`, `TRUEPREDICATE`; arguments `%@ %d %i %ld %f`,
/// quoted strings and numbers; `%K` for a key.
public final class NSPredicate: Sendable, CustomStringConvertible {
    let parsed: Result<[Filter], NimbusError>
    public let predicateFormat: String

    public init(value: Bool) {
        predicateFormat = value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        parsed = value ? .success([])
            : .failure(NimbusError(.invalidArguments, reason: "NSPredicate(value: false) matches nothing; do not run the query."))
    }

    public convenience init(format: String, _ arguments: any CVarArg...) {
        self.init(format: format, argumentArray: arguments)
    }

    public init(format: String, argumentArray: [Any]?) {
        predicateFormat = format
        parsed = Result {
            var parser = try PredicateParser(format: format, arguments: argumentArray ?? [])
            return try parser.parse()
        }
            .mapError { $0 as? NimbusError ?? NimbusError(.invalidArguments, reason: "\($0)") }
    }

    /// A predicate restored from an archive: its format and the filters it was parsed into.
    init(format: String, filters: [Filter]) {
        predicateFormat = format
        parsed = .success(filters)
    }

    public var description: String { predicateFormat }

    func nimbusFilters() throws -> [Filter] {
        do { return try parsed.get() } catch { throw CKError(error) }
    }
}

/// A sort key (`NSSortDescriptor(key:ascending:)` is missing from Linux's Foundation).
public final class NSSortDescriptor: Sendable {
    public let key: String?
    public let ascending: Bool

    public init(key: String?, ascending: Bool) {
        self.key = key
        self.ascending = ascending
    }
}

// `Date`, `NSDate`, `NSNumber` and arrays are predicate arguments (`%@`), as on Apple platforms.
extension Date: @retroactive CVarArg {
    public var _cVarArgEncoding: [Int] { timeIntervalSinceReferenceDate._cVarArgEncoding }
}

extension NSDate: @retroactive CVarArg {
    public var _cVarArgEncoding: [Int] { timeIntervalSinceReferenceDate._cVarArgEncoding }
}

extension NSNumber: @retroactive CVarArg {
    public var _cVarArgEncoding: [Int] { doubleValue._cVarArgEncoding }
}

extension Array: @retroactive CVarArg {
    public var _cVarArgEncoding: [Int] { [] }
}
#endif
