/// Evaluating a query's filters against one record, as the SQL of records/query does (docs/api.md
/// Details): filters are ANDed; a record without the field matches only NOT_EQUALS and NOT_IN.
extension QueryFilter {
    package func matches(_ record: Record) -> Bool {
        let actual: FieldValue?
        switch field {
        case .field(let name): actual = record.fields[name]
        case .recordName: actual = .string(record.recordName)
        case .createTime: actual = .timestamp(record.created.timestamp)
        case .modTime: actual = .timestamp(record.modified.timestamp)
        }
        guard let actual else {
            return comparator == .notEquals || comparator == .notIn
        }
        switch comparator {
        case .equals: return Self.equal(actual, value)
        case .notEquals: return !Self.equal(actual, value)
        case .lessThan: return Self.order(actual, value).map { $0 < 0 } ?? false
        case .lessThanOrEquals: return Self.order(actual, value).map { $0 <= 0 } ?? false
        case .greaterThan: return Self.order(actual, value).map { $0 > 0 } ?? false
        case .greaterThanOrEquals: return Self.order(actual, value).map { $0 >= 0 } ?? false
        case .in, .notIn:
            guard case .list(_, let candidates) = value else { return false }
            let found = candidates.contains { Self.equal(actual, $0) }
            return comparator == .in ? found : !found
        case .beginsWith:
            guard case .string(let text) = actual, case .string(let prefix) = value else { return false }
            return text.utf8.starts(with: prefix.utf8)
        case .listContains:
            guard case .list(_, let elements) = actual else { return false }
            return elements.contains { Self.equal($0, value) }
        }
    }

    /// Equality as jsonb compares: numbers by value, references by record name.
    static func equal(_ lhs: FieldValue, _ rhs: FieldValue) -> Bool {
        if let order = order(lhs, rhs) { return order == 0 }
        switch (lhs, rhs) {
        case (.reference(let a), .reference(let b)): return a.recordName == b.recordName
        case (.reference(let a), .string(let b)), (.string(let b), .reference(let a)): return a.recordName == b
        case (.asset(let a), .asset(let b)): return a.fileChecksum == b.fileChecksum && a.size == b.size
        default: return lhs == rhs
        }
    }

    /// -1, 0, 1 for comparable values (numbers with numbers, strings with strings); nil otherwise.
    static func order(_ lhs: FieldValue, _ rhs: FieldValue) -> Int? {
        if let a = lhs.number, let b = rhs.number {
            return a < b ? -1 : (a > b ? 1 : 0)
        }
        if case .string(let a) = lhs, case .string(let b) = rhs {
            // Byte order, as the C collation of the embedded database.
            return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : (a == b ? 0 : 1)
        }
        return nil
    }
}

extension FieldValue {
    fileprivate var number: Double? {
        switch self {
        case .int64(let value), .timestamp(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }
}

extension RecordQuery {
    /// True when the record is of the query's type and passes every filter.
    package func matches(_ record: Record) -> Bool {
        record.recordType == recordType && filters.allSatisfy { $0.matches(record) }
    }
}
