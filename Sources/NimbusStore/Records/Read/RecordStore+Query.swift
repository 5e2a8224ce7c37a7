import Foundation
import NimbusCore
import NimbusSupport
import NimbusPostgres

package struct QueryPage: Sendable {
    /// The page's records, decoded or (with `renderingWireJSON`) as wire JSON.
    package var changes: [RecordChanges.Change]
    package var continuationMarker: String?

    /// The decoded records: all of them unless the page was read `renderingWireJSON`.
    package var records: [Record] {
        changes.compactMap { change in
            if case .record(let record) = change { record } else { nil }
        }
    }
}

extension RecordStore {
    /// `records/query`: live records of one type in a zone, filtered, sorted, one page at a time.
    /// Pages continue by keyset (the last row's sort values), so inserts and deletes between
    /// pages neither repeat nor skip records that stay.
    /// With `renderingWireJSON`, records stored with their wire form come as that JSON written from
    /// the row (as change feeds send them), the others decoded.
    package func queryRecords(_ session: Session, zoneName: String, query: RecordQuery, renderingWireJSON: Bool = false) async throws -> QueryPage {
        // Two statements (the zone, whose id the marker is bound to, then the page), on the
        // request's event loop when it has one.
        let zone = try await pool.queryFirst("""
            SELECT zone_name, id, change_seq, tombstone_horizon_seq, deleted FROM zones
            WHERE database_id = \(session.databaseID) AND zone_name = \(zoneName)
            """, decode: ZoneStore.decodeZone)
        guard let zone, !zone.deleted else { throw SyncError(.zoneNotFound, "Zone \(zoneName) does not exist.") }
        let builder = QuerySQLBuilder(query: query, zoneID: zone.id)
        let markerContext = builder.markerContext(zoneName: zoneName)
        var after: [String]?
        if let marker = query.continuationMarker {
            guard let payload = signer.verify(marker, context: markerContext),
                  case .array(let values)? = try? JSONValue.parse(payload),
                  values.count == builder.keyCount else {
                throw SyncError(.badRequest, "The continuationMarker does not belong to this query.")
            }
            after = values.compactMap(\.stringValue)
            guard after?.count == builder.keyCount else { throw SyncError(.badRequest, "The continuationMarker is malformed.") }
        }
        let statement = builder.statement(after: after, limit: query.resultsLimit + 1, renderingWireJSON: renderingWireJSON)
        let keyOffset = renderingWireJSON ? RecordRows.changeColumnCount : RecordRows.recordColumnCount
        let keyCount = builder.keyCount
        let limit = query.resultsLimit
        // One row more than the page says whether another follows; the marker holds the sort
        // values of the page's last row, so only that row's are read.
        let read = try await pool.read(statement) { rows -> (changes: [RecordChanges.Change], lastKeys: [String]?) in
            let count = min(rows.count, limit)
            var written = WirePage(rows: count, renderingWireJSON: renderingWireJSON)
            for index in 0..<count {
                _ = try written.add(rows[index], zoneName: zoneName, offset: 0)
            }
            let lastKeys = rows.count > limit && count > 0
                ? try (0..<keyCount).map { try rows[count - 1].string(keyOffset + $0) } : nil
            return (written.changes(), lastKeys)
        }
        let marker = read.lastKeys.map { keys in
            signer.sign(JSONValue.array(keys.map { .string($0) }).serialized(), context: markerContext)
        }
        return QueryPage(changes: read.changes, continuationMarker: marker)
    }
}

/// Turns a parsed query into one parameterized statement.
struct QuerySQLBuilder {
    let query: RecordQuery
    let zoneID: Int64

    /// Sort keys: the query's, then the record name as tie-breaker.
    var keys: [(field: QueryField, ascending: Bool)] {
        var keys = query.sort.map { ($0.field, $0.ascending) }
        if !keys.contains(where: { $0.0 == .recordName }) {
            keys.append((.recordName, keys.last?.1 ?? true))
        }
        return keys
    }

    var keyCount: Int { keys.count }

    /// Binds markers to the query's zone (by id, so another database's zone of the same name
    /// refuses them as it refuses forged ones), type and order.
    func markerContext(zoneName: String) -> String {
        "query|\(zoneID)|\(zoneName)|\(query.recordType)|" + keys.map { "\($0.field.name):\($0.ascending)" }.joined(separator: ",")
    }

    func statement(after: [String]?, limit: Int, renderingWireJSON: Bool = false) -> SQL {
        var sql: SQL = "SELECT \(unsafeColumns: RecordRows.readColumns(renderingWireJSON: renderingWireJSON))"
        for key in keys {
            sql.append(", ")
            sql.append(textExpression(key.field))
        }
        sql.append(" FROM records r WHERE r.zone_id = \(zoneID) AND r.record_type = \(name: query.recordType) AND NOT r.deleted")
        for filter in query.filters {
            sql.append(" AND (")
            sql.append(condition(filter))
            sql.append(")")
        }
        if let after {
            sql.append(" AND (")
            sql.append(keysetCondition(after))
            sql.append(")")
        }
        sql.append(" ORDER BY ")
        for (index, key) in keys.enumerated() {
            if index > 0 { sql.append(", ") }
            sql.append(expression(key.field))
            sql.append(key.ascending ? " ASC" : " DESC")
        }
        sql.append(" LIMIT \(constant: Int64(limit))")
        // Connections plan generically (plan_cache_mode = force_generic_plan, also for unnamed
        // statements), so the record type, the field names and the limit are constants: only
        // then can the plan use the partial expression indexes of the apps' queries.
        return sql
    }

    /// The sort expression. For record fields it matches the expression indexes of migration
    /// 0002: jsonb orders numbers numerically, and COALESCE gives missing fields a place.
    func expression(_ field: QueryField) -> SQL {
        switch field {
        case .field(let name): "COALESCE(r.fields->\(name: name)->'value', 'null'::jsonb)"
        case .recordName: "r.record_name"
        case .createTime: "r.created_at"
        case .modTime: "r.modified_at"
        }
    }

    /// The sort value as text for continuation markers.
    func textExpression(_ field: QueryField) -> SQL {
        switch field {
        case .field: "(\(expression(field)))::text"
        case .recordName: "r.record_name"
        case .createTime: "((extract(epoch FROM r.created_at) * 1000000)::int8)::text"
        case .modTime: "((extract(epoch FROM r.modified_at) * 1000000)::int8)::text"
        }
    }

    /// A marker value back in the expression's type.
    func literal(_ field: QueryField, _ text: String) -> SQL {
        switch field {
        case .field: "\(text)::jsonb"
        case .recordName: "\(text)::text"
        case .createTime, .modTime: "'epoch'::timestamptz + \(Int64(text) ?? 0) * interval '1 microsecond'"
        }
    }

    /// Rows strictly after the marker in the query's order.
    func keysetCondition(_ values: [String]) -> SQL {
        let keys = keys
        if keys.allSatisfy({ $0.ascending == keys[0].ascending }) {
            // A row comparison: one index range scan when an index matches the order.
            var sql: SQL = "("
            for (index, key) in keys.enumerated() {
                if index > 0 { sql.append(", ") }
                sql.append(expression(key.field))
            }
            sql.append(keys[0].ascending ? ") > (" : ") < (")
            for (index, key) in keys.enumerated() {
                if index > 0 { sql.append(", ") }
                sql.append(literal(key.field, values[index]))
            }
            sql.append(")")
            return sql
        }
        // Mixed directions: (k1 after v1) OR (k1 = v1 AND k2 after v2) OR ...
        var sql: SQL = "false"
        for index in keys.indices {
            sql.append(" OR (true")
            for previous in 0..<index {
                sql.append(" AND ")
                sql.append(expression(keys[previous].field))
                sql.append(" = ")
                sql.append(literal(keys[previous].field, values[previous]))
            }
            sql.append(" AND ")
            sql.append(expression(keys[index].field))
            sql.append(keys[index].ascending ? " > " : " < ")
            sql.append(literal(keys[index].field, values[index]))
            sql.append(")")
        }
        return sql
    }

    func condition(_ filter: QueryFilter) -> SQL {
        switch filter.field {
        case .field(let name):
            return fieldCondition(name, filter.comparator, filter.value)
        case .recordName:
            return nameCondition(filter.comparator, filter.value)
        case .createTime:
            return timeCondition("r.created_at", filter.comparator, filter.value)
        case .modTime:
            return timeCondition("r.modified_at", filter.comparator, filter.value)
        }
    }

    private func fieldCondition(_ name: String, _ comparator: QueryComparator, _ value: FieldValue) -> SQL {
        let json = PGData.jsonb(value.json.serializedString)
        switch comparator {
        case .equals:
            if case .reference(let reference) = value {
                return "r.fields->\(name: name)->'value'->>'recordName' = \(reference.recordName)"
            }
            return "r.fields->\(name: name)->'value' = \(json)"
        case .notEquals:
            if case .reference(let reference) = value {
                return "(r.fields->\(name: name)->'value'->>'recordName' = \(reference.recordName)) IS NOT TRUE"
            }
            return "(r.fields->\(name: name)->'value' = \(json)) IS NOT TRUE"
        case .lessThan: return "r.fields->\(name: name)->'value' < \(json)"
        case .lessThanOrEquals: return "r.fields->\(name: name)->'value' <= \(json)"
        case .greaterThan: return "r.fields->\(name: name)->'value' > \(json)"
        case .greaterThanOrEquals: return "r.fields->\(name: name)->'value' >= \(json)"
        case .in, .notIn:
            let test: SQL
            if case .list(.reference, let references) = value {
                let names = references.compactMap { if case .reference(let r) = $0 { r.recordName } else { nil } }
                test = "r.fields->\(name: name)->'value'->>'recordName' = ANY(\(PGData.textArray(names)))"
            } else {
                test = "\(json) @> jsonb_build_array(r.fields->\(name: name)->'value')"
            }
            if comparator == .in { return test }
            var negated: SQL = "("
            negated.append(test)
            negated.append(") IS NOT TRUE")
            return negated
        case .beginsWith:
            let prefix: String = if case .string(let text) = value { text } else { "" }
            return "starts_with(r.fields->\(name: name)->>'value', \(prefix))"
        case .listContains:
            if case .reference(let reference) = value {
                let element = PGData.jsonb(JSONValue.array([.object(["recordName": .string(reference.recordName)])]).serializedString)
                return "r.fields->\(name: name)->'value' @> \(element)"
            }
            return "r.fields->\(name: name)->'value' @> jsonb_build_array(\(json))"
        }
    }

    private func nameCondition(_ comparator: QueryComparator, _ value: FieldValue) -> SQL {
        func name(_ value: FieldValue) -> String {
            switch value {
            case .string(let text): text
            case .reference(let reference): reference.recordName
            default: ""
            }
        }
        let names: [String] = if case .list(_, let values) = value { values.map(name) } else { [] }
        switch comparator {
        case .equals: return "r.record_name = \(name(value))"
        case .notEquals: return "r.record_name <> \(name(value))"
        case .lessThan: return "r.record_name < \(name(value))"
        case .lessThanOrEquals: return "r.record_name <= \(name(value))"
        case .greaterThan: return "r.record_name > \(name(value))"
        case .greaterThanOrEquals: return "r.record_name >= \(name(value))"
        case .in: return "r.record_name = ANY(\(PGData.textArray(names)))"
        case .notIn: return "NOT (r.record_name = ANY(\(PGData.textArray(names))))"
        case .beginsWith: return "starts_with(r.record_name, \(name(value)))"
        case .listContains: return "false"
        }
    }

    private func timeCondition(_ column: StaticString, _ comparator: QueryComparator, _ value: FieldValue) -> SQL {
        let millis: [Int64] = switch value {
        case .timestamp(let ms): [ms]
        case .list(_, let values): values.compactMap { if case .timestamp(let ms) = $0 { ms } else { nil } }
        default: []
        }
        var sql: SQL = "(extract(epoch FROM \(unsafeColumns: column)) * 1000)::int8"
        let first = millis.first ?? 0
        switch comparator {
        case .equals: sql.append(" = \(first)")
        case .notEquals: sql.append(" <> \(first)")
        case .lessThan: sql.append(" < \(first)")
        case .lessThanOrEquals: sql.append(" <= \(first)")
        case .greaterThan: sql.append(" > \(first)")
        case .greaterThanOrEquals: sql.append(" >= \(first)")
        case .in: sql.append(" = ANY(\(PGData.int64Array(millis)))")
        case .notIn: sql.append(" <> ALL(\(PGData.int64Array(millis)))")
        case .beginsWith, .listContains: return "false"
        }
        return sql
    }
}
