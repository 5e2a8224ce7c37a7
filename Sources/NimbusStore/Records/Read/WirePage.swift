import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The records of one answer (changes, lookup, query) as their rows are read: a record stored
/// with its wire form, and a tombstone, is written straight from the row into one buffer; the
/// others are decoded. `changes()` hands them over in row order, each written record a slice of
/// one shared array: no array, copy or enum box of its own per record.
struct WirePage: ~Copyable {
    private enum Item {
        case written(Range<Int>)
        case decoded(Record)
    }

    private var writer: JSONPageWriter
    private var items: [Item] = []
    /// Whether records stored with their wire form are written (no `desiredKeys` to apply).
    private let renderingWireJSON: Bool

    /// A page for about `rows` rows.
    init(rows: Int, renderingWireJSON: Bool) {
        // A typical record's wire JSON is under 1 KiB; the writer grows past that if it must.
        writer = JSONPageWriter(capacity: renderingWireJSON ? min(max(rows, 1), 1_000) * 1_024 : 64)
        items.reserveCapacity(rows)
        self.renderingWireJSON = renderingWireJSON
    }

    /// Reads the record in `row` (`RecordRows.readColumns` from `offset`); returns its change sequence.
    mutating func add(_ row: PGRow, zoneName: String, offset: Int) throws -> Int64 {
        if renderingWireJSON, let stored = try RecordRows.storedRecordText(row, offset: offset) {
            let start = writer.count
            stored.writeJSON(zoneName: zoneName, to: &writer)
            items.append(.written(start..<writer.count))
            return stored.sequence
        }
        items.append(.decoded(try RecordRows.decodeRecord(row, zoneName: zoneName, offset: offset)))
        return try row.int64(offset + 3)
    }

    /// The records in the order they were added.
    consuming func changes() -> [RecordChanges.Change] {
        let bytes = writer.finish()
        return items.map { item in
            switch item {
            case .written(let range): .wireJSON(bytes[range])
            case .decoded(let record): .record(record)
            }
        }
    }
}
