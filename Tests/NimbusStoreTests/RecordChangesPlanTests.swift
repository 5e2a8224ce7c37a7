import Foundation
import NimbusPostgres
import NimbusTestSupport
import Testing
@testable import NimbusStore

/// A page of `records/changes` in a large zone reads its rows from `records_by_change` in order
/// and stops at the limit, whatever the planner estimates (issue #28, item 8: the generic plan
/// sorted the whole rest of the zone for every page, a first sync of 100,000 records took 14-28 s).
@Suite("records/changes page plan", .serialized)
struct RecordChangesPlanTests {
    @Test func aPageOfALargeZoneIsReadInIndexOrderNotSorted() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            let zone = try await fixture.store.zones.listZones(session)[0]
            let zoneID = zone.id
            try await fixture.run { connection in
                // One zone of 20,000 records among 400 small ones (records has no foreign key to
                // zones): the generic plan estimates a handful of rows for any zone.
                try connection.run("""
                    INSERT INTO records (zone_id, record_name, record_type, fields, change_seq, created_by_device, modified_by_device)
                    SELECT \(zoneID), 'r-' || g, 'Event', '{}'::jsonb, g, 'mac', 'mac' FROM generate_series(1, 20000) g
                    """)
                try connection.run("""
                    INSERT INTO records (zone_id, record_name, record_type, fields, change_seq, created_by_device, modified_by_device)
                    SELECT 1000000 + z, 'r-' || g, 'Event', '{}'::jsonb, g, 'mac', 'mac'
                    FROM generate_series(1, 400) z, generate_series(1, 10) g
                    """)
                try connection.run("UPDATE zones SET change_seq = 20000 WHERE id = \(zoneID)")
                try connection.run("ANALYZE records")
            }
            // EXPLAIN of the statement the server runs, with its parameters, on pool connections
            // (which plan generically: plan_cache_mode = force_generic_plan).
            let statement = RecordStore.changesPage(databaseID: session.databaseID, zoneName: zone.name, after: 0,
                                                    includeTombstones: false, types: nil, limit: 400,
                                                    renderingWireJSON: true, liveToken: nil)
            var explain: SQL = "EXPLAIN "
            explain.append(statement)
            let explained = explain
            let plan: @Sendable (PGRows) throws -> String = { rows in
                try (0..<rows.count).map { try rows[$0].string(0) }.joined(separator: "\n")
            }
            let ordered = try await fixture.pool.readInIndexOrder(explained, plan)
            #expect(ordered.contains("Index Scan using records_by_change"), "\(ordered)")
            #expect(!ordered.contains("Sort"), "\(ordered)")
            // The same statement read plainly: the plan this test exists for (a bitmap scan of the
            // whole zone and a sort), so that the setting above is what makes the difference.
            let plain = try await fixture.pool.read(explained, plan)
            #expect(plain.contains("Sort"), "the set-up no longer reproduces the sorted plan: \(plain)")
            // And the pages themselves: every record once, in order, through the store.
            var token: String? = nil
            var seen = 0
            var pages = 0
            while true {
                let page = try await fixture.store.records.recordChanges(session, zoneName: zone.name, token: token, limit: 400,
                                                                         desiredRecordTypes: nil, renderingWireJSON: true)
                seen += page.changes.count
                pages += 1
                token = page.token
                if !page.moreComing { break }
            }
            #expect(seen == 20000 && pages == 50)
        }
    }
}
