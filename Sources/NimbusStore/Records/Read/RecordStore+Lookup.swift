import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

extension RecordStore {
    /// `records/lookup`: records by name, in request order; missing (or deleted) ones are nil.
    package func lookupRecords(_ session: Session, zoneName: String, names: [String]) async throws -> [Record?] {
        try await lookupRecords(session, zoneName: zoneName, names: names, renderingWireJSON: false).map { found in
            if case .record(let record)? = found { record } else { nil }
        }
    }

    /// `records/lookup` for an answer: with `renderingWireJSON`, records stored with their wire
    /// form come as that JSON written from the row (as change feeds send them), the others decoded.
    /// One statement (the zone and its records), on the request's event loop when it has one.
    package func lookupRecords(_ session: Session, zoneName: String, names: [String],
                               renderingWireJSON: Bool) async throws -> [RecordChanges.Change?] {
        let read = try await pool.read("""
            WITH z AS (SELECT id FROM zones WHERE database_id = \(session.databaseID) AND zone_name = \(zoneName) AND NOT deleted)
            SELECT z.id, \(unsafeColumns: RecordRows.readColumns(renderingWireJSON: renderingWireJSON))
            FROM z LEFT JOIN LATERAL (
                SELECT * FROM records r WHERE r.zone_id = z.id AND r.record_name = ANY(\(PGData.textArray(names))) AND NOT r.deleted
            ) r ON true
            """) { rows -> (names: [String], changes: [RecordChanges.Change])? in
            guard rows.count > 0 else { return nil }
            var written = WirePage(rows: rows.count, renderingWireJSON: renderingWireJSON)
            var names: [String] = []
            for index in 0..<rows.count where !rows[index].isNull(1) {
                names.append(try rows[index].string(1))
                _ = try written.add(rows[index], zoneName: zoneName, offset: 1)
            }
            return (names, written.changes())
        }
        guard let read else { throw SyncError(.zoneNotFound, "Zone \(zoneName) does not exist.") }
        let found = Dictionary(zip(read.names, read.changes), uniquingKeysWith: { first, _ in first })
        return names.map { found[$0] }
    }
}
