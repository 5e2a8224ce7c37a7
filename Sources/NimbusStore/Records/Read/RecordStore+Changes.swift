import Foundation
import NimbusCore
import NimbusPostgres

package struct RecordChanges: Sendable {
    /// One record read for an answer (changes, lookup, query): decoded, or (with
    /// `renderingWireJSON`) its wire JSON written straight from the row (`StoredRecordText`:
    /// tombstones, and records stored with their wire form).
    package enum Change: Sendable {
        case record(Record)
        /// A slice of the page's one array of written records.
        case wireJSON(ArraySlice<UInt8>)
    }

    /// Live records and tombstones (`deleted` true), each once, in change order.
    package var changes: [Change]
    package var token: String
    package var moreComing: Bool
    package var zone: ZoneInfo

    /// The decoded records: all of them unless the changes were fetched `renderingWireJSON`.
    package var records: [Record] {
        changes.compactMap { change in
            if case .record(let record) = change { record } else { nil }
        }
    }
}

extension RecordStore {
    /// `records/changes`: what changed in a zone after a token (everything live without one).
    ///
    /// The zone's sequence Z and the rows come from one statement, hence one snapshot; every
    /// transaction that took a sequence <= Z committed before that snapshot (writers take
    /// sequences under the zone's row lock and hold it until commit), so no change at or below
    /// the returned token can appear later.
    package func recordChanges(_ session: Session, zoneName: String, token text: String?, limit: Int,
                               desiredRecordTypes: Set<String>?, renderingWireJSON: Bool = false,
                               proof: SessionProof = .verified) async throws -> RecordChanges {
        var since: Int64 = 0
        var tokenZoneID: Int64?
        if let text {
            guard let token = signer.decodeZoneToken(text, zoneName: zoneName), token.databaseID == session.databaseID else {
                throw SyncError(.badRequest, "The syncToken is not a valid token of zone \(zoneName) (it was cut, altered, or is another zone's or user's); fetch again without a token.")
            }
            since = token.sequence
            tokenZoneID = token.zoneID
        }
        let statement = Self.changesPage(databaseID: session.databaseID, zoneName: zoneName, after: since,
                                         includeTombstones: text != nil, types: desiredRecordTypes, limit: limit,
                                         renderingWireJSON: renderingWireJSON,
                                         liveToken: proof.liveTokenCheck(tokenID: session.tokenID))
        // In index order, never a sort: the page is the first rows of records_by_change after
        // `since`, which the generic plan's estimates cannot see (PGPool.readInIndexOrder).
        let page = try await pool.readInIndexOrder(statement) { rows -> (zone: ZoneInfo, lost: Bool, sequences: [Int64], changes: [RecordChanges.Change])? in
            guard rows.count > 0 else { return nil }
            let first = rows[0]
            let zone = ZoneInfo(name: zoneName, id: try first.int64(0), changeSequence: try first.int64(1),
                                horizon: try first.int64(2), deleted: try first.bool(3))
            var written = WirePage(rows: rows.count, renderingWireJSON: renderingWireJSON)
            var sequences: [Int64] = []
            sequences.reserveCapacity(rows.count)
            for index in 0..<rows.count where !rows[index].isNull(5) {
                sequences.append(try written.add(rows[index], zoneName: zoneName, offset: 5))
            }
            return (zone, try first.bool(4), sequences, written.changes())
        }
        guard let read = page, !read.zone.deleted else {
            throw SyncError(.zoneNotFound, "Zone \(zoneName) does not exist.")
        }
        let zone = read.zone
        if let tokenZoneID {
            guard tokenZoneID == zone.id else {
                throw SyncError(.changeTokenExpired, "The syncToken is from before zone \(zoneName) was deleted and created again; fetch again without a token.")
            }
            guard since >= zone.horizon else {
                throw SyncError(.changeTokenExpired, "The syncToken is older than the zone's retention horizon; fetch again without a token.")
            }
            guard since <= zone.changeSequence, !read.lost else {
                throw SyncError(.changeTokenExpired, "The syncToken is from changes this server no longer has "
                    + "(it was restored from a backup taken before them); fetch again without a token.")
            }
        }
        var sequences = read.sequences, changes = read.changes
        if zip(sequences, sequences.dropFirst()).contains(where: { $0 >= $1 }) {
            let sorted = zip(sequences, changes).sorted { $0.0 < $1.0 }
            sequences = sorted.map(\.0)
            changes = sorted.map(\.1)
        }
        let moreComing = changes.count > limit
        if moreComing {
            sequences.removeLast(sequences.count - limit)
            changes.removeLast(changes.count - limit)
        }
        let position = moreComing ? (sequences.last ?? since) : zone.changeSequence
        let token = signer.encode(ZoneChangeToken(databaseID: session.databaseID, zoneID: zone.id, sequence: max(position, since)),
                                  zoneName: zoneName)
        database.syncPositions.note(tokenID: session.tokenID, zoneID: zone.id, sequence: max(position, since),
                                       atMilliseconds: clock.nowMilliseconds())
        return RecordChanges(changes: changes, token: token, moreComing: moreComing, zone: zone)
    }

    /// The statement of one page of `records/changes`: the zone's row (sequence, horizon, whether
    /// `after` falls in a restored gap) with the first `limit + 1` rows of the zone after `after` in
    /// change order. `liveToken`: a cached session's check (`SessionProof.liveTokenCheck`): the
    /// zone is found only while the token is live. Run it with `readInIndexOrder` (the rows come in the lateral's order).
    static func changesPage(databaseID: Int64, zoneName: String, after: Int64, includeTombstones: Bool,
                            types desiredRecordTypes: Set<String>?, limit: Int, renderingWireJSON: Bool,
                            liveToken: SQL?) -> SQL {
        let types: PGData = desiredRecordTypes.map { .textArray(Array($0)) } ?? .null
        var zoneQuery: SQL = """
            SELECT id, change_seq, tombstone_horizon_seq, deleted,
                   \(after) > lost_after_seq AND \(after) < lost_through_seq AS lost
            FROM zones
            WHERE database_id = \(databaseID) AND zone_name = \(zoneName)
            """
        if let liveToken {
            // A session from the cache: the zone is found only while the token is live, and the
            // caller checks the token again on "not found".
            zoneQuery.append(" AND ")
            zoneQuery.append(liveToken)
        }
        let zoneRow = zoneQuery
        // No ORDER BY outside: the lateral subquery's rows come in its order (one zone row, a
        // nested loop), and sorting 200 rows with their fields again cost PostgreSQL 10% of the
        // statement. The order is checked by the caller all the same.
        // The zone's columns repeat on every row: read once, from the first.
        return """
            WITH z AS (\(zoneRow))
            SELECT z.id, z.change_seq, z.tombstone_horizon_seq, z.deleted, z.lost,
                   \(unsafeColumns: RecordRows.readColumns(renderingWireJSON: renderingWireJSON))
            FROM z LEFT JOIN LATERAL (
                SELECT * FROM records r
                WHERE r.zone_id = z.id AND r.change_seq > \(after) AND r.change_seq <= z.change_seq
                  AND (\(includeTombstones) OR NOT r.deleted)
                  AND (\(types)::text[] IS NULL OR r.record_type = ANY(\(types)::text[]))
                ORDER BY r.change_seq
                LIMIT \(Int64(limit + 1))
            ) r ON true
            """
    }
}
