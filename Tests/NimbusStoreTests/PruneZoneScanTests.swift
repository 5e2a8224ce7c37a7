import NimbusTestSupport
import Foundation
import NimbusCore
import NimbusPostgres
@testable import NimbusStore
import NimbusSupport
import Testing

/// The scheduled prune's first statement, the zones with expired records, must not read the
/// records of types without a policy: it once evaluated the schema join for every live record,
/// and a zone of a million such records kept a core busy for minutes at every run of the job.
@Suite struct PruneZoneScanTests {
    @Test func theZoneQueryReadsOnlyRecordsOfTypesWithAPolicy() async throws {
        try await StoreFixture.with { fixture in
            let (store, clock, session) = try await RetentionTests.appLocker(fixture)
            _ = try await store.zones.modifyZones(session, operations: [.create("Events")])
            let now = clock.now
            // 20,000 locked-app lists (no policy) and 5 fresh events in the default zone; one
            // expired event in zone Events.
            let zone = try #require(try await store.zones.listZones(session).first { $0.name == "_defaultZone" })
            let zoneID = zone.id, lists: Int64 = 20_000
            try await fixture.run { connection in
                try connection.run("""
                    INSERT INTO records (zone_id, record_name, record_type, fields, change_seq, created_at, created_by_device,
                                         modified_at, modified_by_device, deleted)
                    SELECT \(zoneID), 'list-' || g, 'LockedAppList', '{}'::jsonb, g, now() - interval '400 days', 'mac',
                           now() - interval '400 days', 'mac', false
                    FROM generate_series(1, \(lists)) g
                    """)
                try connection.run("UPDATE zones SET change_seq = \(lists) WHERE id = \(zoneID)")
            }
            try await RetentionTests.save(store, session, (0..<5).map { RetentionTests.event("fresh-\($0)", at: now) })
            clock.set(now - 31 * RetentionTests.day)
            try await RetentionTests.save(store, session, [RetentionTests.event("old", at: now - 31 * RetentionTests.day)], zone: "Events")
            clock.set(now)
            try await fixture.run { try $0.run("VACUUM ANALYZE records") }

            let statement = Pruner.zonesWithExpiredRecordsStatement(PruneOptions(), now: now)
            let zones = try await fixture.run { connection in try connection.query(statement) { try $0.string(1) } }
            #expect(zones == ["Events"])
            let (read, plan) = try await Self.recordRowsRead(fixture, statement)
            #expect(read < 100, "the zone query read \(read) rows of records (20,000 of them have no policy): \(plan)")
        }
    }

    @Test func namedTypesWithoutAPolicyAreStillFoundWithOlderThan() async throws {
        try await StoreFixture.with { fixture in
            let (store, clock, session) = try await RetentionTests.appLocker(fixture)
            let now = clock.now
            clock.set(now - 2 * RetentionTests.day)
            try await RetentionTests.save(store, session, [RetentionTests.lockedAppList("locked-mac", at: now - 2 * RetentionTests.day)])
            clock.set(now)
            var options = PruneOptions()
            options.olderThanSeconds = 86_400
            options.recordTypes = ["LockedAppList"]
            let named = Pruner.zonesWithExpiredRecordsStatement(options, now: now)
            #expect(try await fixture.run { connection in try connection.query(named) { try $0.string(1) } } == ["_defaultZone"])
            // Without the name, a type without a policy is not pruned by --older-than.
            options.recordTypes = []
            let unnamed = Pruner.zonesWithExpiredRecordsStatement(options, now: now)
            #expect(try await fixture.run { connection in try connection.query(unnamed) { try $0.string(1) } }.isEmpty)
        }
    }

    /// Rows of `records` the plan of `statement` read (returned or filtered out), from EXPLAIN ANALYZE.
    static func recordRowsRead(_ fixture: StoreFixture, _ statement: SQL) async throws -> (rows: Int, plan: String) {
        var query: SQL = "EXPLAIN (ANALYZE, FORMAT JSON) "
        query.append(statement)
        let explain = query
        let text = try await fixture.run { connection in try connection.query(explain) { try $0.string(0) } }.joined()
        func rows(_ node: JSONValue) -> Int {
            var total = 0
            if node["Relation Name"]?.stringValue == "records" || node["Index Name"]?.stringValue?.hasPrefix("records") == true {
                let loops = Int(node["Actual Loops"]?.doubleValue ?? 1)
                total += (Int(node["Actual Rows"]?.doubleValue ?? 0) + Int(node["Rows Removed by Filter"]?.doubleValue ?? 0)) * loops
            }
            for child in node["Plans"]?.arrayValue ?? [] { total += rows(child) }
            return total
        }
        let plans = try JSONValue.parse(text).arrayValue ?? []
        return (plans.reduce(0) { $0 + rows($1["Plan"] ?? .null) }, text)
    }
}
