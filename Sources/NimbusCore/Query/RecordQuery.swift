import NimbusSupport
/// A field a query filters or sorts on: a record field or one of the system fields.
package enum QueryField: Sendable, Hashable {
    case field(String)
    /// `___recordID`
    case recordName
    /// `___createTime`
    case createTime
    /// `___modTime`
    case modTime

    init?(name: String) {
        switch name {
        case "___recordID": self = .recordName
        case "___createTime": self = .createTime
        case "___modTime": self = .modTime
        default:
            guard Names.isValidFieldName(name) else { return nil }
            self = .field(name)
        }
    }

    package var name: String {
        switch self {
        case .field(let name): name
        case .recordName: "___recordID"
        case .createTime: "___createTime"
        case .modTime: "___modTime"
        }
    }
}

package enum QueryComparator: String, Sendable, CaseIterable {
    case equals = "EQUALS"
    case notEquals = "NOT_EQUALS"
    case lessThan = "LESS_THAN"
    case lessThanOrEquals = "LESS_THAN_OR_EQUALS"
    case greaterThan = "GREATER_THAN"
    case greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
    case `in` = "IN"
    case notIn = "NOT_IN"
    case beginsWith = "BEGINS_WITH"
    case listContains = "LIST_CONTAINS"
}

/// One `filterBy` entry with its value typed.
package struct QueryFilter: Sendable, Hashable {
    package var field: QueryField
    package var comparator: QueryComparator
    package var value: FieldValue

    package init(field: QueryField, comparator: QueryComparator, value: FieldValue) {
        self.field = field
        self.comparator = comparator
        self.value = value
    }
}

package struct QuerySort: Sendable, Hashable {
    package var field: QueryField
    package var ascending: Bool

    package init(field: QueryField, ascending: Bool) {
        self.field = field
        self.ascending = ascending
    }
}

/// A parsed `records/query` request (docs/api.md Records/query and Details).
package struct RecordQuery: Sendable, Hashable {
    package var recordType: String
    package var filters: [QueryFilter]
    package var sort: [QuerySort]
    package var resultsLimit: Int
    package var desiredKeys: Set<String>?
    package var continuationMarker: String?

    package init(recordType: String, filters: [QueryFilter] = [], sort: [QuerySort] = [], resultsLimit: Int = 200,
                 desiredKeys: Set<String>? = nil, continuationMarker: String? = nil) {
        self.recordType = recordType
        self.filters = filters
        self.sort = sort
        self.resultsLimit = resultsLimit
        self.desiredKeys = desiredKeys
        self.continuationMarker = continuationMarker
    }

    /// Parses the request body; `schema` types filter values sent without `type`.
    package static func parse(_ body: JSONValue, schema: [String: RecordTypeSchema], limits: Limits) throws(SyncError) -> RecordQuery {
        func fail(_ reason: String) -> SyncError { SyncError(.badRequest, reason) }
        guard case .object(let queryObject)? = body["query"] else { throw fail("records/query needs a \"query\" object.") }
        guard case .string(let recordType)? = queryObject["recordType"], Names.isValidRecordType(recordType) else {
            throw fail("query.recordType must be a record type name.")
        }
        let typeSchema = schema[recordType]
        var query = RecordQuery(recordType: recordType, filters: [], sort: [], resultsLimit: limits.defaultResultsLimit,
                                desiredKeys: nil, continuationMarker: nil)
        if let filterValue = queryObject["filterBy"], !filterValue.isNull {
            guard case .array(let filters) = filterValue else { throw fail("query.filterBy must be an array.") }
            for filter in filters {
                query.filters.append(try parseFilter(filter, schema: typeSchema))
            }
        }
        if let sortValue = queryObject["sortBy"], !sortValue.isNull {
            guard case .array(let sorts) = sortValue else { throw fail("query.sortBy must be an array.") }
            for sort in sorts {
                guard case .string(let name)? = sort["fieldName"], let field = QueryField(name: name) else {
                    throw fail("Each sortBy entry needs a valid fieldName.")
                }
                if case .field(let fieldName) = field, typeSchema?.fields[fieldName]?.isEncrypted == true {
                    throw fail("sortBy names \(fieldName), an encrypted field of \(recordType): the server cannot read it to sort on it.")
                }
                var ascending = true
                if let value = sort["ascending"], !value.isNull {
                    guard case .bool(let flag) = value else { throw fail("sortBy.ascending must be true or false.") }
                    ascending = flag
                }
                query.sort.append(QuerySort(field: field, ascending: ascending))
            }
        }
        query.resultsLimit = try resultsLimit(body["resultsLimit"], limits: limits)
        if let keys = body["desiredKeys"], !keys.isNull {
            guard let parsed = RecordOperation.parseDesiredKeys(keys) else { throw fail("desiredKeys must be an array of field names.") }
            query.desiredKeys = parsed
        }
        if let marker = body["continuationMarker"], !marker.isNull {
            guard case .string(let text) = marker, !text.isEmpty else { throw fail("continuationMarker must be a string.") }
            query.continuationMarker = text
        }
        return query
    }

    /// `resultsLimit`: default when absent, capped at the maximum; must be a positive integer.
    package static func resultsLimit(_ value: JSONValue?, limits: Limits) throws(SyncError) -> Int {
        guard let value, !value.isNull else { return limits.defaultResultsLimit }
        guard case .integer(let number) = value, number >= 1 else {
            throw SyncError(.badRequest, "resultsLimit must be a positive integer.")
        }
        return Int(min(number, Int64(limits.maxResultsLimit)))
    }

    private static func parseFilter(_ json: JSONValue, schema: RecordTypeSchema?) throws(SyncError) -> QueryFilter {
        func fail(_ reason: String) -> SyncError { SyncError(.badRequest, reason) }
        guard case .object(let object) = json else { throw fail("Each filterBy entry must be an object.") }
        guard case .string(let name)? = object["fieldName"], let field = QueryField(name: name) else {
            throw fail("Each filterBy entry needs a valid fieldName.")
        }
        guard case .string(let comparatorName)? = object["comparator"] else { throw fail("filterBy on \(name) needs a comparator.") }
        guard let comparator = QueryComparator(rawValue: comparatorName) else {
            throw fail("Unknown comparator \(Names.quoted(comparatorName)); use one of \(QueryComparator.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        guard case .object(let valueObject)? = object["fieldValue"], let raw = valueObject["value"], !raw.isNull else {
            throw fail("filterBy on \(name) needs fieldValue.value.")
        }
        var declared: FieldType?
        if let typeValue = valueObject["type"], !typeValue.isNull {
            guard case .string(let typeName) = typeValue, let parsed = FieldType(name: typeName) else {
                throw fail("filterBy on \(name) has an unknown fieldValue.type.")
            }
            declared = parsed
        }
        if case .field(let fieldName) = field, schema?.fields[fieldName]?.isEncrypted == true || declared?.isEncrypted == true {
            throw fail("filterBy names \(fieldName), an encrypted field: the server cannot read it to filter on it.")
        }
        // The type the field holds.
        let fieldType: FieldType?
        switch field {
        case .recordName: fieldType = .string
        case .createTime, .modTime: fieldType = .timestamp
        case .field(let fieldName): fieldType = schema?.fields[fieldName]
        }
        // A declared type must agree with the field's (a _LIST for IN/NOT_IN, the element for
        // LIST_CONTAINS); ___recordID also takes REFERENCE values.
        if let declared, let fieldType {
            let expected: FieldType = switch comparator {
            case .in, .notIn: FieldType(fieldType.base, isList: true)
            case .listContains: fieldType.element
            default: fieldType
            }
            let allowedReference = field == .recordName && declared.base == .reference && declared.isList == expected.isList
            if declared != expected && !allowedReference {
                throw fail("filterBy on \(name) sends \(declared.name), but the comparison needs \(expected.name).")
            }
        }
        if comparator == .listContains, declared?.isList == true {
            throw fail("LIST_CONTAINS on \(name) takes one element, not a _LIST value.")
        }
        // The type the value must have for this comparator.
        var valueType: FieldType?
        switch comparator {
        case .in, .notIn:
            valueType = declared ?? fieldType.map { FieldType($0.base, isList: true) }
            if let type = valueType, !type.isList { throw fail("\(comparator.rawValue) on \(name) needs a _LIST value.") }
        case .listContains:
            if let fieldType, !fieldType.isList { throw fail("LIST_CONTAINS on \(name) needs a _LIST field; \(name) is \(fieldType.name).") }
            valueType = declared ?? fieldType?.element
        case .beginsWith:
            valueType = declared ?? fieldType ?? .string
            if valueType != .string { throw fail("BEGINS_WITH on \(name) needs a STRING value.") }
        default:
            valueType = declared ?? fieldType
        }
        if field == .recordName, valueType?.base == .reference {
            valueType = valueType?.isList == true ? FieldType(.reference, isList: true) : .reference
        }
        if valueType == nil, FieldTyper.isWholeNumberBeyond64Bits(raw) {
            throw fail("filterBy on \(name): a whole number outside 64 bits has no type; send fieldValue.type.")
        }
        guard let type = valueType ?? FieldValue.inferType(raw) else {
            throw fail("filterBy on \(name): the value's type is unknown; send fieldValue.type.")
        }
        if (comparator == .in || comparator == .notIn) && !type.isList {
            throw fail("\(comparator.rawValue) on \(name) needs a _LIST value.")
        }
        if comparator == .listContains && type.isList {
            throw fail("LIST_CONTAINS on \(name) takes one element, not a _LIST value.")
        }
        let value: FieldValue
        do {
            value = try FieldValue.decode(raw, as: type)
        } catch {
            throw fail("filterBy on \(name) expects \(type.name), but the value is \(error.given).")
        }
        return QueryFilter(field: field, comparator: comparator, value: value)
    }
}
