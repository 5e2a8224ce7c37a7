import Foundation

/// Where the next page of a query starts, CloudKit's `CKQueryOperation.Cursor`. It archives with
/// `NSSecureCoding` (the query, its zone and the server's continuation marker), so a paging app
/// can resume after a relaunch. Top-level because Linux's `NSKeyedArchiver` cannot name a nested class.
public final class CKQueryCursor: NSObject, NSSecureCoding, Sendable {
    let cursor: QueryCursor
    init(_ cursor: QueryCursor) { self.cursor = cursor }

    public static var supportsSecureCoding: Bool { true }
    static let cursorKey = "NimbusQueryCursor"

    public func encode(with coder: NSCoder) { coder.encodeJSON(CursorArchive(cursor), forKey: CKQueryCursor.cursorKey) }

    public init?(coder: NSCoder) {
        guard let archive = coder.decodeJSON(CursorArchive.self, forKey: CKQueryCursor.cursorKey) else { return nil }
        cursor = archive.cursor
    }

    public override func isEqual(_ object: Any?) -> Bool { (object as? CKQueryCursor)?.cursor == cursor }
    public override var hash: Int { cursor.hashValue }
}

/// A query cursor's archived form.
struct CursorArchive: Codable {
    var marker: String
    var zoneName: String
    var recordType: String
    var filters: [FilterArchive]
    var sort: [SortArchive]

    struct SortArchive: Codable {
        var fieldName: String
        var ascending: Bool
    }

    init(_ cursor: QueryCursor) {
        marker = cursor.marker
        zoneName = cursor.zoneID.zoneName
        recordType = cursor.query.recordType
        filters = cursor.query.filters.map(FilterArchive.init)
        sort = cursor.query.sort.map { SortArchive(fieldName: $0.fieldName, ascending: $0.ascending) }
    }

    var cursor: QueryCursor {
        QueryCursor(marker: marker,
                    query: Query(recordType: recordType, filters: filters.compactMap(\.filter),
                                 sort: sort.map { Sort($0.fieldName, ascending: $0.ascending) }),
                    zoneID: ZoneID(zoneName))
    }
}

/// A NimbusKit filter's archived form (cursors and query subscriptions).
struct FilterArchive: Codable {
    var fieldName: String
    var comparator: String
    var value: RecordValue
    var typedBySchema: Bool?

    init(_ filter: Filter) {
        fieldName = filter.fieldName
        comparator = filter.comparator.rawValue
        value = filter.value
        typedBySchema = filter.typedBySchema
    }

    var filter: Filter? {
        guard let comparator = Filter.Comparator(rawValue: comparator) else { return nil }
        var filter = Filter(fieldName, comparator, value)
        filter.typedBySchema = typedBySchema ?? false
        return filter
    }
}
