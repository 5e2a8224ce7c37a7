import Foundation

/// A query: a record type, a predicate (the subset NimbusKit filters express) and sort descriptors.
public final class CKQuery: @unchecked Sendable {
    // Safe as CloudKit's CKQuery is: configured by one owner before it is run.
    public let recordType: String
    public let predicate: NSPredicate
    public var sortDescriptors: [NSSortDescriptor]?
    /// NimbusKit filters ANDed with the predicate's, for what a predicate cannot say here.
    public var filters: [Filter] = []

    public init(recordType: String, predicate: NSPredicate) {
        self.recordType = recordType
        self.predicate = predicate
    }

    /// The NimbusKit query; a predicate outside the supported subset is `invalidArguments`.
    func nimbusQuery() throws -> Query {
        let sort = try (sortDescriptors ?? []).map { descriptor -> Sort in
            guard let key = descriptor.key else {
                throw CKError(NimbusError(.invalidArguments, reason: "A sort descriptor needs a key."))
            }
            return Sort(key, ascending: descriptor.ascending)
        }
        return Query(recordType: recordType, filters: try predicate.nimbusFilters() + filters, sort: sort)
    }
}
