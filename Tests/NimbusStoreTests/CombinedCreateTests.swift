import NimbusTestSupport
import Foundation
import NimbusCore
import NimbusPostgres
@testable import NimbusStore
import Testing

/// The create fast path's combined statement (`Store.writeCreates`) against PostgreSQL.
@Suite struct CombinedCreateTests {
    let limits = Limits()

    /// A zone with one record created through the full path (which leaves the zone's id in the
    /// write caches), and the container's current schema version.
    func warmZone(_ fixture: StoreFixture, _ session: Session, _ zone: String) async throws -> (zoneID: Int64, schemaVersion: Int64) {
        if zone != "_defaultZone" { _ = try await fixture.store.zones.modifyZones(session, operations: [.create(zone)]) }
        _ = try await fixture.store.records.modifyRecords(session, zoneName: zone, operations: [operation(.create, "warm-\(zone)", ["n": 0])],
                                                  atomic: false, limits: limits)
        guard let zoneID = fixture.store.caches.zoneID(.init(databaseID: session.databaseID, zoneName: zone)) else {
            throw FixtureError(description: "the full path left no zone id in the caches")
        }
        // The version after the first save defined the type (the cache may hold the one before).
        let container = session.container, environment = session.environment.rawValue
        let version = try await fixture.run { connection in
            try connection.queryFirst(
                "SELECT version FROM schema_versions WHERE container = \(container) AND environment = \(environment)"
            ) { try $0.int64(0) }
        }
        return (zoneID, version ?? 0)
    }

    func planned(_ session: Session, zoneID: Int64, schemaVersion: Int64, names: [String], digest: [UInt8]? = nil) -> PlannedCreates {
        var planned = PlannedCreates(session: session, proof: digest.map { .cached(tokenDigest: $0) } ?? .verified, zoneID: zoneID, schemaVersion: schemaVersion, now: 1_700_000_000_000)
        for name in names {
            planned.append(name: name, type: "Note", wireFields: Array(#"{"n":{"type":"INT64","value":1}}"#.utf8), expiresAt: nil)
        }
        return planned
    }

    func sequences(_ fixture: StoreFixture, zoneID: Int64) async throws -> [String: Int64] {
        let rows = try await fixture.run { connection in
            try connection.query("SELECT record_name, change_seq FROM records WHERE zone_id = \(zoneID)") { (try $0.string(0), try $0.int64(1)) }
        }
        return Dictionary(uniqueKeysWithValues: rows)
    }

    @Test func aCombinedStatementNumbersEachZoneInRequestOrder() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            let one = try await warmZone(fixture, session, "one")
            let two = try await warmZone(fixture, session, "two")
            let outcomes = await FastCreate.writeCreates([
                planned(session, zoneID: one.zoneID, schemaVersion: one.schemaVersion, names: ["a1", "a2"]),
                planned(session, zoneID: two.zoneID, schemaVersion: two.schemaVersion, names: ["b1"]),
                planned(session, zoneID: one.zoneID, schemaVersion: one.schemaVersion, names: ["c1", "c2", "c3"]),
            ], pool: fixture.pool)
            let firsts = outcomes.map { outcome -> Int64? in if case .written(let first) = outcome { first } else { nil } }
            // Each zone had its warm-up record at sequence 1.
            #expect(firsts == [2, 2, 4])
            #expect(try await sequences(fixture, zoneID: one.zoneID) == ["warm-one": 1, "a1": 2, "a2": 3, "c1": 4, "c2": 5, "c3": 6])
            #expect(try await sequences(fixture, zoneID: two.zoneID) == ["warm-two": 1, "b1": 2])
            let changes = try await fixture.store.records.recordChanges(session, zoneName: "one", token: nil, limit: 200, desiredRecordTypes: nil)
            #expect(changes.records.map(\.recordName) == ["warm-one", "a1", "a2", "c1", "c2", "c3"])
        }
    }

    @Test func anExistingRecordUndoesTheWholeBatchAndItsMembersRetryAlone() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            let zone = try await warmZone(fixture, session, "_defaultZone")
            let outcomes = await FastCreate.writeCreates([
                planned(session, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["fresh"]),
                planned(session, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["warm-_defaultZone"]),
            ], pool: fixture.pool)
            #expect(outcomes.allSatisfy { if case .retryAlone = $0 { true } else { false } })
            #expect(try await sequences(fixture, zoneID: zone.zoneID) == ["warm-_defaultZone": 1], "nothing of the batch stayed")
            // Alone, the fresh one is written and the existing one is not taken (the full path answers it).
            let alone = await FastCreate.writeCreates([planned(session, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["fresh"])],
                                                 pool: fixture.pool)
            guard case .written(let first) = alone[0] else { Issue.record("\(alone)"); return }
            #expect(first == 2)
            let existing = await FastCreate.writeCreates([planned(session, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion,
                                                             names: ["warm-_defaultZone"])], pool: fixture.pool)
            guard case .notTaken = existing[0] else { Issue.record("\(existing)"); return }
        }
    }

    @Test func aRevokedTokenOrAStaleSchemaFailsTheBatch() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            let zone = try await warmZone(fixture, session, "_defaultZone")
            let token = try await fixture.store.accounts.issueToken(user: "alice", device: "phone")
            let digest = AccountStore.tokenDigest(token.secret)
            guard let phone = try await fixture.store.accounts.session(tokenDigest: digest, container: session.container,
                                                               environment: session.environment) else {
                Issue.record("no session for the phone"); return
            }
            let live = await FastCreate.writeCreates([
                planned(phone, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["p1"], digest: digest),
                planned(session, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["m1"]),
            ], pool: fixture.pool)
            #expect(live.allSatisfy { if case .written = $0 { true } else { false } }, "\(live)")
            try await fixture.store.accounts.revokeToken(tokenID: phone.tokenID)
            let revoked = await FastCreate.writeCreates([
                planned(phone, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["p2"], digest: digest),
                planned(session, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["m2"]),
            ], pool: fixture.pool)
            #expect(revoked.allSatisfy { if case .retryAlone = $0 { true } else { false } }, "\(revoked)")
            let stale = await FastCreate.writeCreates([
                planned(session, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion + 1, names: ["m3"]),
                planned(session, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["m4"]),
            ], pool: fixture.pool)
            #expect(stale.allSatisfy { if case .retryAlone = $0 { true } else { false } }, "\(stale)")
            #expect(Set(try await sequences(fixture, zoneID: zone.zoneID).keys) == ["warm-_defaultZone", "p1", "m1"])
        }
    }

    /// The one-request statement (a template) checks what the combined one checks: each check
    /// failing alone leaves the request to the full path and writes nothing.
    @Test func theSingleStatementChecksTheTokenTheSchemaTheZoneAndSubscriptions() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            let zone = try await warmZone(fixture, session, "_defaultZone")
            let token = try await fixture.store.accounts.issueToken(user: "alice", device: "phone")
            let digest = AccountStore.tokenDigest(token.secret)
            guard let phone = try await fixture.store.accounts.session(tokenDigest: digest, container: session.container,
                                                               environment: session.environment) else {
                Issue.record("no session for the phone"); return
            }
            func alone(_ planned: PlannedCreates) async -> String {
                switch await FastCreate.writeCreates([planned], pool: fixture.pool)[0] {
                case .written(let first): "written \(first)"
                case .notTaken: "not taken"
                case .retryAlone: "retry alone"
                case .failed(let error): "failed: \(error)"
                }
            }
            #expect(await alone(planned(phone, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["p1"], digest: digest)) == "written 2")
            #expect(await alone(planned(session, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["s1", "s2"])) == "written 3")
            #expect(await alone(planned(session, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion + 1, names: ["stale"])) == "not taken")
            #expect(await alone(planned(session, zoneID: zone.zoneID + 1_000, schemaVersion: zone.schemaVersion, names: ["elsewhere"])) == "not taken")
            var otherDatabase = session
            otherDatabase.databaseID += 1_000
            #expect(await alone(planned(otherDatabase, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["foreign"])) == "not taken")
            try await fixture.store.accounts.revokeToken(tokenID: phone.tokenID)
            #expect(await alone(planned(phone, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["p2"], digest: digest)) == "not taken")
            _ = try await fixture.store.subscriptions.modifySubscriptions(session, operations: [
                .save(try RetentionTests.subscription("all", firesOn: ["create"]), mustExist: false),
            ])
            #expect(await alone(planned(session, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["watched"])) == "not taken")
            #expect(try await sequences(fixture, zoneID: zone.zoneID) == ["warm-_defaultZone": 1, "p1": 2, "s1": 3, "s2": 4])
        }
    }

    @Test func concurrentCreatesAreEachWrittenOnceWithGaplessSequences() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            var zones: [String: Int64] = [:]
            for zone in ["z0", "z1", "z2"] { zones[zone] = try await warmZone(fixture, session, zone).zoneID }
            let store = fixture.store, limits = limits
            let tags = try await withThrowingTaskGroup(of: [String].self) { group in
                for writer in 0..<30 {
                    group.addTask {
                        let results = try await store.records.modifyRecords(session, zoneName: "z\(writer % 3)", operations: [
                            operation(.create, "w\(writer)-a", ["n": 1]), operation(.create, "w\(writer)-b", ["n": 2]),
                        ], atomic: false, limits: limits)
                        return results.compactMap { if case .saved(let record, _) = $0 { record.changeTag } else { nil } }
                    }
                }
                var tags: [String] = []
                for try await batch in group { tags += batch }
                return tags
            }
            #expect(tags.count == 60)
            for (name, zoneID) in zones {
                let sequences = try await sequences(fixture, zoneID: zoneID).values.sorted()
                #expect(sequences == Array(1...21), "zone \(name): \(sequences)")
                let changes = try await fixture.store.records.recordChanges(session, zoneName: name, token: nil, limit: 200, desiredRecordTypes: nil)
                #expect(changes.records.count == 21)
            }
            #expect(fixture.store.database.createCombiner.counts.submissions >= 30)
        }
    }

    /// Two instances (or --write-batches above 1) run combined statements over the same zones at
    /// once, each batch a different subset: the zones are locked in id order, so no two batches wait
    /// for each other in a cycle (PostgreSQL's deadlock detector would fail one with a 503). Without
    /// the ordered lock, the UPDATE's join visits zones in its hash aggregate's order, which
    /// depends on the batch's size: bench/scaleout.sh saw a deadlock every few seconds.
    @Test func concurrentBatchesOverTheSameZonesDoNotDeadlock() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            var zones: [(zoneID: Int64, schemaVersion: Int64)] = []
            for index in 0..<24 { zones.append(try await warmZone(fixture, session, "d\(index)")) }
            let pool = fixture.pool
            var generator = SystemRandomNumberGenerator()
            let batches = (0..<120).map { round in
                zones.shuffled(using: &generator).prefix(Int.random(in: 2...zones.count, using: &generator)).enumerated().map { index, zone in
                    planned(session, zoneID: zone.zoneID, schemaVersion: zone.schemaVersion, names: ["r\(round)-\(index)"])
                }
            }
            let failures = await withTaskGroup(of: [String].self) { group in
                for batch in batches {
                    group.addTask {
                        let outcomes = await FastCreate.writeCreates(batch, pool: pool)
                        return outcomes.compactMap { if case .failed(let error) = $0 { "\(error)" } else { nil } }
                    }
                }
                return await group.reduce([], +)
            }
            let failed = failures.count, first = failures.first ?? ""
            #expect(failed == 0, "\(failed) creates failed, e.g. \(first)")
        }
    }
}
