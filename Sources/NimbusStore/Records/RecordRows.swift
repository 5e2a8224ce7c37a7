import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The `records` table's row, defined once: the columns reads select, the columns writes
/// insert and what an upsert replaces, and the decoding of a row into a `Record`.
enum RecordRows {
    /// Columns every record read selects, in `decodeRecord` order.
    static let recordColumns: StaticString = """
        r.record_name, r.record_type, r.fields, r.change_seq, \
        r.created_at, r.created_by_user, r.created_by_device, \
        r.modified_at, r.modified_by_user, r.modified_by_device, r.deleted
        """

    /// Times are stored in whole milliseconds (every write sets them from one), so the
    /// timestamps read back exactly.
    static func decodeRecord(_ row: PGRow, zoneName: String, offset: Int = 0) throws -> Record {
        let fields: [String: FieldValue]
        do {
            fields = try Record.fields(fromStored: try JSONValue.parse(try row.jsonb(offset + 2)))
        } catch {
            throw PGError(.decoding, "stored fields of \(try row.string(offset)) are unreadable: \(error)")
        }
        return Record(
            recordName: try row.string(offset), recordType: try row.string(offset + 1), fields: fields,
            changeTag: ChangeTag.make(sequence: try row.int64(offset + 3)),
            created: RecordStamp(timestamp: try row.milliseconds(offset + 4), userRecordName: try row.string(offset + 5), deviceID: try row.string(offset + 6)),
            modified: RecordStamp(timestamp: try row.milliseconds(offset + 7), userRecordName: try row.string(offset + 8), deviceID: try row.string(offset + 9)),
            deleted: try row.bool(offset + 10), zoneName: zoneName)
    }

    /// `recordColumns` for change feeds: the jsonb fields only where no wire form was stored for
    /// the record's current version (printing jsonb was most of PostgreSQL's work for a page of
    /// changes), and that wire form last (migration 0009).
    static let changeColumns: StaticString = """
        r.record_name, r.record_type, CASE WHEN r.wire_fields_seq = r.change_seq AND r.wire_fields IS NOT NULL THEN NULL ELSE r.fields END, r.change_seq, \
        r.created_at, r.created_by_user, r.created_by_device, \
        r.modified_at, r.modified_by_user, r.modified_by_device, r.deleted, \
        CASE WHEN r.wire_fields_seq = r.change_seq THEN r.wire_fields END
        """

    /// A row of `changeColumns` as bytes in place (see `StoredRecordText`), or nil when it is a
    /// live record without a stored wire form: decode that one (`decodeRecord`).
    static func storedRecordText(_ row: PGRow, offset: Int = 0) throws -> StoredRecordText? {
        let deleted = try row.bool(offset + 10)
        guard deleted || !row.isNull(offset + 11) else { return nil }
        return StoredRecordText(
            recordName: try row.unsafeText(offset), recordType: try row.unsafeText(offset + 1),
            fields: deleted ? UnsafeRawBufferPointer(start: nil, count: 0) : try row.unsafeText(offset + 11),
            sequence: try row.int64(offset + 3),
            created: .init(timestamp: try row.milliseconds(offset + 4), userRecordName: try row.unsafeText(offset + 5), deviceID: try row.unsafeText(offset + 6)),
            modified: .init(timestamp: try row.milliseconds(offset + 7), userRecordName: try row.unsafeText(offset + 8), deviceID: try row.unsafeText(offset + 9)),
            deleted: deleted)
    }

    static let recordColumnCount = 11
    static let changeColumnCount = 12

    /// The columns `WirePage.add` expects.
    static func readColumns(renderingWireJSON: Bool) -> StaticString {
        renderingWireJSON ? changeColumns : recordColumns
    }

    static func records(_ connection: PGConnection, zoneID: Int64, zoneName: String, names: [String]) throws -> [String: Record] {
        guard !names.isEmpty else { return [:] }
        let rows = try connection.query("""
            SELECT \(unsafeColumns: recordColumns) FROM records r
            WHERE r.zone_id = \(zoneID) AND r.record_name = ANY(\(PGData.textArray(names)))
            """) { try decodeRecord($0, zoneName: zoneName) }
        return Dictionary(rows.map { ($0.recordName, $0) }, uniquingKeysWith: { first, _ in first })
    }


    /// The columns every `INSERT INTO records` names, in this order.
    static let insertColumns: StaticString = """
        zone_id, record_name, record_type, fields, wire_fields, wire_fields_seq, change_seq, \
        created_at, created_by_device, created_by_user, \
        modified_at, modified_by_device, modified_by_user, deleted, expires_at
        """

    /// What a save over an existing row (a live record or a tombstone) replaces: every column
    /// but the zone and the name.
    static let upsertAssignments: StaticString = """
        record_type = excluded.record_type, fields = excluded.fields, wire_fields = excluded.wire_fields, \
        wire_fields_seq = excluded.wire_fields_seq, change_seq = excluded.change_seq, created_at = excluded.created_at, \
        created_by_device = excluded.created_by_device, created_by_user = excluded.created_by_user, \
        modified_at = excluded.modified_at, modified_by_device = excluded.modified_by_device, \
        modified_by_user = excluded.modified_by_user, deleted = false, expires_at = excluded.expires_at
        """
}
