import Foundation

/// A query subscription's predicate inside its archive.
extension NSPredicate {
    static let formatKeySuffix = ".format", filtersKeySuffix = ".filters"

#if canImport(Darwin)
    func encode(to coder: NSCoder, forKey key: String) { coder.encode(self, forKey: key) }

    static func decode(from coder: NSCoder, forKey key: String) -> NSPredicate? {
        guard coder.containsValue(forKey: key), let predicate = coder.decodeObject(of: NSPredicate.self, forKey: key) else { return nil }
        predicate.allowEvaluation()
        return predicate
    }
#else
    /// The format and (when it parsed) the filters it stands for: the arguments are not kept apart.
    func encode(to coder: NSCoder, forKey key: String) {
        coder.encode(NSString(string: predicateFormat), forKey: key + NSPredicate.formatKeySuffix)
        if case .success(let filters) = parsed { coder.encodeJSON(filters.map(FilterArchive.init), forKey: key + NSPredicate.filtersKeySuffix) }
    }

    static func decode(from coder: NSCoder, forKey key: String) -> NSPredicate? {
        guard let format = coder.decodeString(forKey: key + NSPredicate.formatKeySuffix) else { return nil }
        if format == "FALSEPREDICATE" { return NSPredicate(value: false) }
        guard let filters = coder.decodeJSON([FilterArchive].self, forKey: key + NSPredicate.filtersKeySuffix) else {
            return NSPredicate(format: format, argumentArray: nil)
        }
        return NSPredicate(format: format, filters: filters.compactMap(\.filter))
    }
#endif
}
