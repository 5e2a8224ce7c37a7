import NimbusTestSupport
import Foundation
import NimbusCore
import NimbusSupport
import NimbusPostgres
@testable import NimbusStore
import Synchronization
import Testing

@Suite struct RecordStoreTests {
    let limits = Limits()

    @Test func savesAndReadsBackThroughEveryPath() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            let results = try await fixture.store.records.modifyRecords(session, zoneName: "_defaultZone", operations: [
                operation(.create, "n1", ["title": "hello", "count": 3]),
                operation(.create, "n2", ["title": "world", "score": 1.5]),
            ], atomic: false, limits: limits)
            guard case .saved(let first, _) = results[0] else { Issue.record("\(results)"); return }
            #expect(first.fields["count"] == .int64(3))
            #expect(first.created.deviceID == "mac")
            let looked = try await fixture.store.records.lookupRecords(session, zoneName: "_defaultZone", names: ["n2", "missing", "n1"])
            #expect(looked.map { $0?.recordName } == ["n2", nil, "n1"])
            #expect(looked[0]?.fields["score"] == .double(1.5))
            let changes = try await fixture.store.records.recordChanges(session, zoneName: "_defaultZone", token: nil, limit: 200, desiredRecordTypes: nil)
            #expect(changes.records.map(\.recordName) == ["n1", "n2"])
            #expect(!changes.moreComing)
            let again = try await fixture.store.records.recordChanges(session, zoneName: "_defaultZone", token: changes.token, limit: 200, desiredRecordTypes: nil)
            #expect(again.records.isEmpty)
        }
    }

    @Test func changesWrittenFromTheRowsAreTheDecodedRecordsBytes() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            let fields: [String: JSONValue] = [
                "title": "Alice's \"iPhone\" \\ ü \u{1} 🙂", "count": 3, "score": 1.5, "big": 9_007_199_254_740_993,
                "tags": .array(["a", "b"]), "scores": .array([0.25, 1e300]),
            ]
            let reference = JSONValue.object(["recordName": "n1", "action": "NONE"])
            let saved = try await fixture.store.records.modifyRecords(session, zoneName: "_defaultZone", operations: [
                operation(.create, "n1", fields),
                .success(RecordOperation(kind: .create, recordName: "n \"2\"", recordType: "Note",
                                         fields: [RawField(name: "when", value: 1_795_000_000_123, declaredType: "TIMESTAMP")])),
                .success(RecordOperation(kind: .create, recordName: "ref", recordType: "Note", fields: [RawField(name: "to", value: reference, declaredType: "REFERENCE")])),
                operation(.create, "gone", ["title": "x"]),
                operation(.create, "old", ["title": "to be rewritten by an older instance"]),
            ], atomic: false, limits: limits)
            #expect(saved.allSatisfy { if case .saved = $0 { true } else { false } }, "\(saved)")
            // An update (read, then written) and a delete rewrite the stored wire form.
            let tag = saved.first.flatMap { if case .saved(let record, _) = $0 { record.changeTag } else { nil } }
            let updated = try await fixture.store.records.modifyRecords(session, zoneName: "_defaultZone", operations: [
                operation(.update, "n1", tag: tag, ["title": "changed", "count": 4]),
                operation(.forceDelete, "gone", type: nil),
            ], atomic: false, limits: limits)
            #expect(updated.count == 2 && updated.allSatisfy { if case .failed = $0 { false } else { true } }, "\(updated)")
            // A writer that does not know the wire form (an instance from before migration 0009)
            // moves the record on without it: decoded from `fields` from then on, never sent stale.
            _ = try await fixture.pool.withConnection { connection in
                try connection.run("""
                    WITH z AS (UPDATE zones SET change_seq = change_seq + 1 WHERE id = (SELECT zone_id FROM records WHERE record_name = 'old')
                               RETURNING change_seq)
                    UPDATE records SET fields = '{"title": {"type": "STRING", "value": "rewritten"}}', change_seq = (SELECT change_seq FROM z)
                    WHERE record_name = 'old'
                    """)
            }
            let first = try await fixture.store.records.recordChanges(session, zoneName: "_defaultZone", token: nil, limit: 1, desiredRecordTypes: nil)
            for token in [nil, first.token] {
                let decoded = try await fixture.store.records.recordChanges(session, zoneName: "_defaultZone", token: token, limit: 200, desiredRecordTypes: nil)
                let written = try await fixture.store.records.recordChanges(session, zoneName: "_defaultZone", token: token, limit: 200, desiredRecordTypes: nil,
                                                                    renderingWireJSON: true)
                #expect(written.token == decoded.token && written.changes.count == decoded.records.count)
                var names: [String] = []
                for (change, record) in zip(written.changes, decoded.records) {
                    switch change {
                    case .wireJSON(let json):
                        var expected: [UInt8] = []
                        record.writeJSON(to: &expected)   // a deleted record as its tombstone
                        #expect(Array(json) == expected, "\(record.recordName)")
                    case .record(let kept):
                        #expect(kept == record)
                        names.append(kept.recordName)
                    }
                }
                #expect(names == ["old"], "only the row without a wire form is decoded")
                #expect(decoded.records.first { $0.recordName == "n1" }?.fields["title"] == .string("changed"))
                #expect(decoded.records.first { $0.recordName == "old" }?.fields["title"] == .string("rewritten"))
            }
            // Lookup and query answer from the rows the same way, with the same bytes.
            func expectSameBytes(_ written: [RecordChanges.Change?], _ decoded: [Record?]) {
                #expect(written.count == decoded.count)
                var names: [String] = []
                for (change, record) in zip(written, decoded) {
                    switch (change, record) {
                    case (nil, nil): break
                    case (.wireJSON(let json)?, let record?):
                        var expected: [UInt8] = []
                        record.writeJSON(to: &expected)
                        #expect(Array(json) == expected, "\(record.recordName)")
                    case (.record(let kept)?, let record?):
                        #expect(kept == record)
                        names.append(kept.recordName)
                    default:
                        Issue.record("\(String(describing: change)) against \(String(describing: record))")
                    }
                }
                #expect(names == ["old"], "only the row without a wire form is decoded")
            }
            let names = ["n1", "missing", "n \"2\"", "gone", "ref", "old"]
            let looked = try await fixture.store.records.lookupRecords(session, zoneName: "_defaultZone", names: names)
            #expect(looked.map { $0?.recordName } == ["n1", nil, "n \"2\"", nil, "ref", "old"])
            expectSameBytes(try await fixture.store.records.lookupRecords(session, zoneName: "_defaultZone", names: names, renderingWireJSON: true), looked)
            let query = RecordQuery(recordType: "Note", filters: [], sort: [QuerySort(field: .recordName, ascending: true)],
                                    resultsLimit: 3, desiredKeys: nil, continuationMarker: nil)
            let page = try await fixture.store.records.queryRecords(session, zoneName: "_defaultZone", query: query)
            let written = try await fixture.store.records.queryRecords(session, zoneName: "_defaultZone", query: query, renderingWireJSON: true)
            #expect(page.records.count == 3 && page.continuationMarker != nil)
            #expect(written.continuationMarker == page.continuationMarker)
            expectSameBytes(written.changes, page.records)
        }
    }

    @Test func deletesCascadeThroughDeleteSelfReferencesInOneTransaction() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            func reference(_ name: String) -> JSONValue { .object(["value": .object(["recordName": .string(name), "action": "DELETE_SELF"]), "type": "REFERENCE"]) }
            // item <- content <- detail (transitive), plus an unrelated record.
            _ = try await fixture.store.records.modifyRecords(session, zoneName: "_defaultZone", operations: [
                operation(.create, "item", ["title": "x"]),
                .success(RecordOperation(kind: .create, recordName: "content", recordType: "Content", fields: [RawField(name: "item", value: reference("item").objectValue?["value"] ?? .null, declaredType: "REFERENCE")])),
                .success(RecordOperation(kind: .create, recordName: "detail", recordType: "Content", fields: [RawField(name: "item", value: reference("content").objectValue?["value"] ?? .null, declaredType: "REFERENCE")])),
                operation(.create, "other", ["title": "y"]),
            ], atomic: true, limits: limits)
            let before = try await fixture.store.records.recordChanges(session, zoneName: "_defaultZone", token: nil, limit: 200, desiredRecordTypes: nil)
            #expect(before.records.count == 4)
            let deleted = try await fixture.store.records.modifyRecords(session, zoneName: "_defaultZone", operations: [operation(.forceDelete, "item", type: nil)],
                                                                atomic: false, limits: limits)
            #expect(deleted == [.deleted(recordName: "item")])
            let after = try await fixture.store.records.recordChanges(session, zoneName: "_defaultZone", token: before.token, limit: 200, desiredRecordTypes: nil)
            #expect(Set(after.records.filter(\.deleted).map(\.recordName)) == ["item", "content", "detail"])
            let live = try await fixture.store.records.lookupRecords(session, zoneName: "_defaultZone", names: ["other", "content"])
            #expect(live.map { $0?.recordName } == ["other", nil])
        }
    }

    @Test func aReferenceToAMissingTargetIsRefused() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            let target = JSONValue.object(["recordName": "ghost", "action": "DELETE_SELF"])
            let results = try await fixture.store.records.modifyRecords(session, zoneName: "_defaultZone", operations: [
                .success(RecordOperation(kind: .create, recordName: "c", recordType: "Content", fields: [RawField(name: "item", value: target, declaredType: "REFERENCE")])),
            ], atomic: false, limits: limits)
            guard case .failed(let error) = results[0] else { Issue.record("\(results)"); return }
            #expect(error.code == .validatingReferenceError)
        }
    }

    @Test func aZoneCreatedAgainExpiresOldTokens() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            _ = try await fixture.store.zones.modifyZones(session, operations: [.create("Events")])
            _ = try await fixture.store.records.modifyRecords(session, zoneName: "Events", operations: [operation(.create, "a")], atomic: false, limits: limits)
            let token = try await fixture.store.records.recordChanges(session, zoneName: "Events", token: nil, limit: 10, desiredRecordTypes: nil).token
            _ = try await fixture.store.zones.modifyZones(session, operations: [.delete("Events")])
            await #expect(throws: SyncError.self) {
                _ = try await fixture.store.records.recordChanges(session, zoneName: "Events", token: token, limit: 10, desiredRecordTypes: nil)
            }
            _ = try await fixture.store.zones.modifyZones(session, operations: [.create("Events")])
            do {
                _ = try await fixture.store.records.recordChanges(session, zoneName: "Events", token: token, limit: 10, desiredRecordTypes: nil)
                Issue.record("an old token was accepted")
            } catch let error as SyncError {
                #expect(error.code == .changeTokenExpired)
            }
            let fresh = try await fixture.store.records.recordChanges(session, zoneName: "Events", token: nil, limit: 10, desiredRecordTypes: nil)
            #expect(fresh.records.isEmpty)
        }
    }

    @Test func tokensBelowTheHorizonAreExpired() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session()
            let first = try await fixture.store.records.recordChanges(session, zoneName: "_defaultZone", token: nil, limit: 10, desiredRecordTypes: nil)
            _ = try await fixture.store.records.modifyRecords(session, zoneName: "_defaultZone", operations: [operation(.create, "a"), operation(.create, "b")],
                                                      atomic: false, limits: limits)
            let databaseID = session.databaseID
            try await fixture.run { try $0.run("UPDATE zones SET tombstone_horizon_seq = 2 WHERE database_id = \(databaseID)") }
            do {
                _ = try await fixture.store.records.recordChanges(session, zoneName: "_defaultZone", token: first.token, limit: 10, desiredRecordTypes: nil)
                Issue.record("a token below the horizon was accepted")
            } catch let error as SyncError {
                #expect(error.code == .changeTokenExpired)
            }
        }
    }

    /// 8 writers and 4 readers on one zone through the store API: every reader ends with every
    /// record in its final state, and its pages only ever move forward.
    @Test func changesNeverSkipACommittedWrite() async throws {
        try await StoreFixture.with(poolSize: 16) { fixture in
            let store = fixture.store
            var writers: [Session] = []
            for index in 0..<8 { writers.append(try await fixture.session(device: "writer\(index)")) }
            let reader = try await fixture.session(device: "reader")
            let deadline = Date().addingTimeInterval(3)
            let acknowledged = Acknowledged()  // name -> highest acknowledged sequence (tag)
            let limits = limits
            try await withThrowingTaskGroup(of: [String: (tag: Int64, deleted: Bool)].self) { group in
                for (index, session) in writers.enumerated() {
                    group.addTask {
                        var counter = 0
                        // At least 8 writes each, however slow a loaded machine makes them.
                        while Date() < deadline || counter < 8 {
                            counter += 1
                            let shared = "s\(counter % 5)"
                            let results = try await store.records.modifyRecords(session, zoneName: "_defaultZone", operations: [
                                operation(.create, "w\(index)-\(counter)", ["n": .integer(Int64(counter))]),
                                operation(.forceUpdate, shared, ["by": .string("w\(index)")]),
                            ], atomic: false, limits: limits)
                            for case .saved(let record, _) in results {
                                let sequence = Int64(record.changeTag, radix: 36) ?? 0
                                acknowledged.state.withLock { $0[record.recordName] = max($0[record.recordName] ?? 0, sequence) }
                            }
                        }
                        return [:]
                    }
                }
                for _ in 0..<4 {
                    group.addTask {
                        var state: [String: (tag: Int64, deleted: Bool)] = [:]
                        var token: String?
                        var lastMaximum: Int64 = 0
                        func page() async throws -> Bool {
                            let changes = try await store.records.recordChanges(reader, zoneName: "_defaultZone", token: token, limit: 7, desiredRecordTypes: nil)
                            let sequences = changes.records.map { Int64($0.changeTag, radix: 36) ?? 0 }
                            if let lowest = sequences.min(), lowest <= lastMaximum {
                                throw FixtureError(description: "a page went backwards: \(lowest) after \(lastMaximum)")
                            }
                            lastMaximum = max(lastMaximum, sequences.max() ?? 0)
                            for record in changes.records {
                                state[record.recordName] = (Int64(record.changeTag, radix: 36) ?? 0, record.deleted)
                            }
                            token = changes.token
                            return changes.moreComing
                        }
                        while Date() < deadline { _ = try await page() }
                        return state
                    }
                }
                var finals: [[String: (tag: Int64, deleted: Bool)]] = []
                for try await state in group where !state.isEmpty { finals.append(state) }
                // Catch-up is part of the readers' contract: check that what they saw is a prefix
                // of the final truth, then that one more pass reaches it exactly.
                let truth = acknowledged.state.withLock { $0 }
                #expect(truth.count > 40)
                let final = try await store.records.recordChanges(reader, zoneName: "_defaultZone", token: nil, limit: 400, desiredRecordTypes: nil)
                var complete: [String: Int64] = [:]
                var more = final.moreComing
                var token = final.token
                for record in final.records { complete[record.recordName] = Int64(record.changeTag, radix: 36) }
                while more {
                    let next = try await store.records.recordChanges(reader, zoneName: "_defaultZone", token: token, limit: 400, desiredRecordTypes: nil)
                    for record in next.records { complete[record.recordName] = Int64(record.changeTag, radix: 36) }
                    more = next.moreComing
                    token = next.token
                }
                #expect(complete == truth)
                for state in finals {
                    for (name, seen) in state {
                        #expect((truth[name] ?? -1) >= seen.tag, "reader saw \(name) at \(seen.tag) beyond any acknowledged write")
                    }
                }
            }
        }
    }

    @Test func theAppsQueriesUseAnIndex() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session(container: "iCloud.com.mirxa.AppLocker")
            let zone = try await fixture.store.zones.listZones(session)[0]
            let zoneID = zone.id
            try await fixture.run { connection in
                try connection.run("""
                    INSERT INTO records (zone_id, record_name, record_type, fields, change_seq, created_by_device, modified_by_device)
                    SELECT \(zoneID), 'evt-' || g, CASE WHEN g % 10 = 0 THEN 'LockedAppList' ELSE 'BlockedAppEvent' END,
                           jsonb_build_object('timestamp', jsonb_build_object('type', 'TIMESTAMP', 'value', 1795000000000 + g),
                                              'updatedAt', jsonb_build_object('type', 'TIMESTAMP', 'value', 1795000000000 + g)),
                           g, 'mac', 'mac'
                    FROM generate_series(1, 30000) g
                    """)
                try connection.run("ANALYZE records")
            }
            // The plan the server runs: pool connections plan generically (force_generic_plan),
            // so the statement is prepared and EXPLAINed through EXECUTE with its parameters —
            // not EXPLAINed with the values, which would show a custom plan the server never gets.
            // (Answers without desiredKeys select the stored wire form, renderingWireJSON.)
            func plan(_ type: String, _ field: String, after: [String]? = nil) async throws -> String {
                let query = RecordQuery(recordType: type, filters: [], sort: [QuerySort(field: .field(field), ascending: false)],
                                        resultsLimit: 100, desiredKeys: nil, continuationMarker: nil)
                let statement = QuerySQLBuilder(query: query, zoneID: zoneID).statement(after: after, limit: 101, renderingWireJSON: true)
                var types: [String] = [], values: [String] = []
                for parameter in statement.parameters {
                    switch parameter {
                    case .int64(let value): types.append("bigint"); values.append(String(value))
                    case .text(let value): types.append("text"); values.append("'" + value.replacingOccurrences(of: "'", with: "''") + "'")
                    default: throw FixtureError(description: "unexpected parameter \(parameter)")
                    }
                }
                let prepare = "PREPARE nimbus_plan_check(" + types.joined(separator: ", ") + ") AS " + statement.text
                let explain = "EXPLAIN EXECUTE nimbus_plan_check(" + values.joined(separator: ", ") + ")"
                return try await fixture.run { connection in
                    try connection.runScript(prepare)
                    defer { try? connection.runScript("DEALLOCATE nimbus_plan_check") }
                    return try connection.query(SQL(stringLiteral: explain)) { try $0.string(0) }.joined(separator: "\n")
                }
            }
            let events = try await plan("BlockedAppEvent", "timestamp")
            #expect(events.contains("records_live_by_timestamp"), "\(events)")
            #expect(!events.contains("Sort"), "\(events)")
            let lists = try await plan("LockedAppList", "updatedAt")
            #expect(lists.contains("records_live_by_updated_at"), "\(lists)")
            #expect(!lists.contains("Sort"), "\(lists)")
            // The next page (keyset after the last row) stays on the index.
            let next = try await plan("BlockedAppEvent", "timestamp", after: ["1795000029900", "evt-29900"])
            #expect(next.contains("records_live_by_timestamp"), "\(next)")
            #expect(!next.contains("Sort"), "\(next)")
        }
    }
}

/// Acknowledged writes shared by the writer tasks.
final class Acknowledged: Sendable {
    let state = Mutex<[String: Int64]>([:])
}
