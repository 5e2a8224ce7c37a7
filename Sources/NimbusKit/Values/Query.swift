import Foundation

/// A typed query (`records/query`): a record type, filters that are ANDed, and a sort order.
/// System fields: `Query.recordNameField`, `Query.creationDateField`, `Query.modificationDateField`.
public struct Query: Sendable, Hashable {
    public var recordType: String
    public var filters: [Filter]
    public var sort: [Sort]

    public init(recordType: String, filters: [Filter] = [], sort: [Sort] = []) {
        self.recordType = recordType
        self.filters = filters
        self.sort = sort
    }

    public static let recordNameField = "___recordID"
    public static let creationDateField = "___createTime"
    public static let modificationDateField = "___modTime"

    func wireQuery() -> JSONObject {
        var object: JSONObject = ["recordType": .string(recordType)]
        if !filters.isEmpty { object["filterBy"] = .array(filters.map { .object($0.wireFilter()) }) }
        if !sort.isEmpty {
            object["sortBy"] = .array(sort.map { ["fieldName": .string($0.fieldName), "ascending": .bool($0.ascending)] })
        }
        return object
    }
}

/// One comparison of a query (docs/api.md's comparators).
public struct Filter: Sendable, Hashable {
    public enum Comparator: String, Sendable, Hashable, CaseIterable {
        case equals = "EQUALS", notEquals = "NOT_EQUALS"
        case lessThan = "LESS_THAN", lessThanOrEquals = "LESS_THAN_OR_EQUALS"
        case greaterThan = "GREATER_THAN", greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
        case `in` = "IN", notIn = "NOT_IN", beginsWith = "BEGINS_WITH", listContains = "LIST_CONTAINS"
    }

    public var fieldName: String
    public var comparator: Comparator
    public var value: RecordValue
    /// Sent without its type, for the server to type from the field's schema: NimbusKitCK's
    /// integer predicate arguments, which CloudKit compares with a DOUBLE field too (widened there).
    package var typedBySchema = false

    public init(_ fieldName: String, _ comparator: Comparator, _ value: any RecordValueConvertible) {
        self.fieldName = fieldName
        self.comparator = comparator
        self.value = value.recordValue
    }

    public static func equals(_ field: String, _ value: any RecordValueConvertible) -> Filter { Filter(field, .equals, value) }
    public static func notEquals(_ field: String, _ value: any RecordValueConvertible) -> Filter { Filter(field, .notEquals, value) }
    public static func lessThan(_ field: String, _ value: any RecordValueConvertible) -> Filter { Filter(field, .lessThan, value) }
    public static func lessThanOrEquals(_ field: String, _ value: any RecordValueConvertible) -> Filter {
        Filter(field, .lessThanOrEquals, value)
    }
    public static func greaterThan(_ field: String, _ value: any RecordValueConvertible) -> Filter { Filter(field, .greaterThan, value) }
    public static func greaterThanOrEquals(_ field: String, _ value: any RecordValueConvertible) -> Filter {
        Filter(field, .greaterThanOrEquals, value)
    }
    /// The field's value is one of `values` (a `_LIST` value).
    public static func `in`(_ field: String, _ values: [any RecordValueConvertible]) -> Filter {
        Filter(field, .in, RecordValue.list(values.map(\.recordValue), elementType: values.first?.recordValue.fieldType ?? .string))
    }
    public static func notIn(_ field: String, _ values: [any RecordValueConvertible]) -> Filter {
        Filter(field, .notIn, RecordValue.list(values.map(\.recordValue), elementType: values.first?.recordValue.fieldType ?? .string))
    }
    public static func beginsWith(_ field: String, _ prefix: String) -> Filter { Filter(field, .beginsWith, prefix) }
    /// A list field contains `element`.
    public static func listContains(_ field: String, _ element: any RecordValueConvertible) -> Filter {
        Filter(field, .listContains, element)
    }

    /// A filter value from the wire: typed, or (sent `typedBySchema`) a JSON number or list of numbers.
    static func valueFromWire(_ field: JSONValue?) throws -> RecordValue? {
        guard let object = JSON.object(field), object["type"] == nil else { return try RecordValue.fromWire(field, zoneID: .default) }
        func number(_ value: JSONValue?) -> RecordValue? {
            if let int = JSON.int64(value) { return .int64(int) }
            return JSON.double(value).map(RecordValue.double)
        }
        if let items = JSON.array(object["value"]) {
            let values = items.compactMap(number)
            guard values.count == items.count else { return nil }
            return .list(values, elementType: values.first?.fieldType ?? .int64)
        }
        return number(object["value"])
    }

    func wireFilter() -> JSONObject {
        var field = value.wireJSON()
        if typedBySchema { field["type"] = nil }
        return ["fieldName": .string(fieldName), "comparator": .string(comparator.rawValue), "fieldValue": .object(field)]
    }
}

/// A sort key of a query.
public struct Sort: Sendable, Hashable {
    public var fieldName: String
    public var ascending: Bool

    public init(_ fieldName: String, ascending: Bool = true) {
        self.fieldName = fieldName
        self.ascending = ascending
    }

    public static func ascending(_ field: String) -> Sort { Sort(field, ascending: true) }
    public static func descending(_ field: String) -> Sort { Sort(field, ascending: false) }
}
