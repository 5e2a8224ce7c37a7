import Foundation

/// A query: a record type, a predicate (the subset NimbusKit filters express) and sort descriptors.
/// It archives with `NSSecureCoding`, as CloudKit's does.
public final class CKQuery: NSObject, NSSecureCoding, @unchecked Sendable {
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

    public static var supportsSecureCoding: Bool { true }
    static let recordTypeKey = "recordType", predicateKey = "predicate", sortKey = "NimbusSort", filtersKey = "NimbusFilters"

    public func encode(with coder: NSCoder) {
        coder.encode(NSString(string: recordType), forKey: CKQuery.recordTypeKey)
        predicate.encode(to: coder, forKey: CKQuery.predicateKey)
        if let sortDescriptors {
            coder.encodeJSON(sortDescriptors.map { CursorArchive.SortArchive(fieldName: $0.key ?? "", ascending: $0.ascending) }, forKey: CKQuery.sortKey)
        }
        if !filters.isEmpty { coder.encodeJSON(filters.map(FilterArchive.init), forKey: CKQuery.filtersKey) }
    }

    public init?(coder: NSCoder) {
        guard let recordType = coder.decodeString(forKey: CKQuery.recordTypeKey),
              let predicate = NSPredicate.decode(from: coder, forKey: CKQuery.predicateKey) else { return nil }
        self.recordType = recordType
        self.predicate = predicate
        sortDescriptors = coder.decodeJSON([CursorArchive.SortArchive].self, forKey: CKQuery.sortKey)?
            .map { NSSortDescriptor(key: $0.fieldName, ascending: $0.ascending) }
        filters = coder.decodeJSON([FilterArchive].self, forKey: CKQuery.filtersKey)?.compactMap(\.filter) ?? []
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
