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

/// Options of a query operation (only what the async query API uses).
public enum CKQueryOperation {
    /// As many as the server gives in one page (its `maxResultsLimit`).
    public static let maximumResults = 0

    /// Where the next page of a query starts.
    public final class Cursor: @unchecked Sendable {
        // Safe: immutable after init.
        let cursor: QueryCursor
        init(_ cursor: QueryCursor) { self.cursor = cursor }
    }
}

/// A change token of a zone (`recordZoneChanges`).
public final class CKServerChangeToken: NSObject, @unchecked Sendable {
    // Safe: immutable after init.
    let token: SyncToken
    init(_ token: SyncToken) { self.token = token }
}
