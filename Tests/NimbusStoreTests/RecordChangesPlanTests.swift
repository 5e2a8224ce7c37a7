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
                // 100,000 records of about 300 bytes in one zone, just loaded, as a first sync after
                // an import meets them: not analyzed yet (autovacuum off for the table here, so it
                // cannot analyze it mid-test), and the generic plan's estimate is a few rows.
                try connection.run("ALTER TABLE records SET (autovacuum_enabled = false)")
                try connection.run("""
                    INSERT INTO records (zone_id, record_name, record_type, fields, wire_fields, wire_fields_seq, change_seq,
                                         created_by_device, modified_by_device)
                    SELECT \(zoneID), 'r-' || g, 'Event',
                           jsonb_build_object('title', jsonb_build_object('type', 'STRING', 'value', repeat('x', 120) || g)),
                           '{"title":{"value":"' || repeat('x', 120) || g || '","type":"STRING"}}', g, g, 'mac', 'mac'
                    FROM generate_series(1, 100000) g
                    """)
                try connection.run("UPDATE zones SET change_seq = 100000 WHERE id = \(zoneID)")
            }
            // The plan the server runs: its statements are prepared and pool connections plan
            // generically (force_generic_plan), so the statement is PREPAREd and EXPLAINed through
            // EXECUTE with its parameters, not EXPLAINed with values (a custom plan).
            let statement = RecordStore.changesPage(databaseID: session.databaseID, zoneName: zone.name, after: 0,
                                                    includeTombstones: false, types: nil, limit: 400,
                                                    renderingWireJSON: true, liveToken: nil)
            var types: [String] = [], values: [String] = []
            for parameter in statement.parameters {
                switch parameter {
                case .int64(let value): types.append("bigint"); values.append(String(value))
                case .text(let value): types.append("text"); values.append("'" + value.replacingOccurrences(of: "'", with: "''") + "'")
                case .bool(let value): types.append("boolean"); values.append(value ? "true" : "false")
                case .null: types.append("text[]"); values.append("NULL")
                default: throw FixtureError(description: "unexpected parameter \(parameter)")
                }
            }
            let text = statement.text, typeList = types, valueList = values
            let (plain, ordered) = try await fixture.run { connection -> (String, String) in
                func explain(_ name: String) throws -> String {
                    try connection.runScript("PREPARE \(name)(" + typeList.joined(separator: ", ") + ") AS " + text)
                    defer { try? connection.runScript("DEALLOCATE \(name)") }
                    let explain = "EXPLAIN EXECUTE \(name)(" + valueList.joined(separator: ", ") + ")"
                    return try connection.query(SQL(stringLiteral: explain)) { try $0.string(0) }.joined(separator: "\n")
                }
                try connection.runScript("SET plan_cache_mode = force_generic_plan")
                let plain = try explain("nimbus_changes_plain")
                // What PGPool.readInIndexOrder does around the statement.
                try connection.runScript("SET enable_sort = off")
                let ordered = try explain("nimbus_changes_ordered")
                try connection.runScript("RESET enable_sort")
                return (plain, ordered)
            }
            // Plainly: the plan this test exists for (a bitmap scan of the whole zone and a sort).
            #expect(plain.contains("Sort"), "the set-up no longer reproduces the sorted plan: \(plain)")
            #expect(ordered.contains("Index Scan using records_by_change"), "\(ordered)")
            #expect(!ordered.contains("Sort"), "\(ordered)")
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
            #expect(seen == 100_000 && pages == 250)
        }
    }
}
