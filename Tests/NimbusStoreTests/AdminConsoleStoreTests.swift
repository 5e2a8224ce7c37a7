import Foundation
import NimbusCore
import NimbusStore
import NimbusSupport
import NimbusTestSupport
import Testing

/// What the console's pages read and change, against a real database.
@Suite struct AdminConsoleStoreTests {
    private func create(_ names: [String], _ session: Session, store: Store) async throws {
        _ = try await store.records.modifyRecords(session, zoneName: "_defaultZone", operations: names.map { name in
            .success(RecordOperation(kind: .create, recordName: name, recordType: "Note", fields: [RawField(name: "title", value: .string(name))]))
        }, atomic: true, limits: Limits())
    }

    @Test func aDevicesLagIsTheRecordsChangedSinceItsLastFetch() async throws {
        try await StoreFixture.with { fixture in
            let store = fixture.store
            let mac = try await fixture.session(device: "mac"), phone = try await fixture.session(device: "phone")
            try await create(["a", "b"], mac, store: store)
            let fetched = try await store.records.recordChanges(phone, zoneName: "_defaultZone", token: nil, limit: 200, desiredRecordTypes: nil)
            var positions = try await store.admin.syncPositions(user: "alice")
            #expect(positions.map(\.tokenID) == [phone.tokenID], "only the device that fetched has a position")
            #expect(positions.first?.lag == 0 && positions.first?.zoneName == "_defaultZone")

            try await create(["c", "d", "e"], mac, store: store)
            _ = try await store.records.modifyRecords(mac, zoneName: "_defaultZone",
                                                      operations: [.success(RecordOperation(kind: .forceDelete, recordName: "a"))],
                                                      atomic: true, limits: Limits())
            positions = try await store.admin.syncPositions(user: "alice")
            #expect(positions.first?.lag == 4, "3 creates and a tombstone since the fetch")

            // A page of 2 with more coming: the position is the page's end, not the zone's head.
            _ = try await store.records.recordChanges(phone, zoneName: "_defaultZone", token: fetched.token, limit: 2, desiredRecordTypes: nil)
            #expect(try await store.admin.syncPositions(user: "alice").first?.lag == 2)
            _ = try await store.records.recordChanges(phone, zoneName: "_defaultZone", token: fetched.token, limit: 200, desiredRecordTypes: nil)
            #expect(try await store.admin.syncPositions(user: "alice").first?.lag == 0)

            try await store.accounts.revokeToken(tokenID: phone.tokenID)
            #expect(try await store.admin.syncPositions(user: "alice").count == 1, "a revoked device keeps its last position")
        }
    }

    @Test func theBrowserPagesByNameHidesTombstonesUnlessAskedAndDeletesThroughTheDeletePath() async throws {
        try await StoreFixture.with { fixture in
            let store = fixture.store
            let mac = try await fixture.session()
            try await create(["r1", "r2", "r3", "r4", "r5"], mac, store: store)
            var browse = RecordBrowse(user: "alice", container: mac.container, environment: .development, zoneName: "_defaultZone")
            browse.limit = 2
            var page = try await store.admin.browse(browse)
            #expect(page.records.map(\.recordName) == ["r1", "r2"] && page.moreComing)
            browse.after = "r4"
            page = try await store.admin.browse(browse)
            #expect(page.records.map(\.recordName) == ["r5"] && !page.moreComing)
            #expect(page.records.first?.fields.contains("\"title\"") == true)

            let ops = AdminIdentity(tokenID: "adm_x", name: "ops")
            try await store.admin.deleteRecord(browse, recordName: "r2", by: ops, limits: Limits())
            browse.after = ""
            browse.limit = 10
            #expect(try await store.admin.browse(browse).records.map(\.recordName) == ["r1", "r3", "r4", "r5"])
            browse.includeTombstones = true
            let tombstone = try await store.admin.browse(browse).records.first { $0.recordName == "r2" }
            #expect(tombstone?.deleted == true && tombstone?.modifiedByDevice == AdminStore.consoleDevice)
            let audit = try await store.admin.auditTrail(limit: 1).first
            #expect(audit?.action == "record.delete" && audit?.target == "r2" && audit?.adminName == "ops")
            let zone = try await store.admin.zones(user: "alice").first
            #expect(zone?.zoneName == "_defaultZone" && zone?.environment == "development" && zone?.liveRecords == 4 && zone?.tombstones == 1)

            var unknown = browse
            unknown.zoneName = "Missing"
            await #expect(throws: SyncError.self) { try await store.admin.browse(unknown) }
            unknown.user = "nobody"
            await #expect(throws: SyncError.self) { try await store.admin.browse(unknown) }
        }
    }

    @Test func retentionAndStorageCountWhatThePrunerWould() async throws {
        try await StoreFixture.with { fixture in
            let store = fixture.store
            let mac = try await fixture.session(), phone = try await fixture.session(device: "phone")
            try await create(["r1", "r2"], mac, store: store)
            _ = try await store.records.recordChanges(phone, zoneName: "_defaultZone", token: nil, limit: 200, desiredRecordTypes: nil)
            _ = try await fixture.run { connection in
                try connection.run("UPDATE records SET expires_at = now() + interval '2 hours' WHERE record_name = 'r1'")
                try connection.run("UPDATE records SET expires_at = now() + interval '3 days' WHERE record_name = 'r2'")
            }
            _ = try await store.records.modifyRecords(mac, zoneName: "_defaultZone", operations: [.success(RecordOperation(kind: .forceDelete, recordName: "r2"))],
                                                      atomic: true, limits: Limits())
            try await create(["r3"], mac, store: store)
            _ = try await fixture.run { connection in
                try connection.run("UPDATE records SET expires_at = now() + interval '3 days' WHERE record_name = 'r3'")
                try connection.run("UPDATE records SET modified_at = now() - interval '100 days' WHERE record_name = 'r2'")
            }
            // The phone fetched before r2 was deleted, and the tombstone is old enough for the next
            // prune (90 days): the phone falls behind that zone's new horizon. The mac never fetched.
            let summary = try await store.admin.retention(tombstoneSeconds: 90 * 86_400, secondsToNextPrune: 3_600)
            let note = summary.types.first
            #expect(summary.types.count == 1 && note?.recordType == "Note")
            #expect(note?.expiringWithinDay == 1 && note?.expiringWithinWeek == 2 && note?.tombstones == 1 && note?.tombstonesExpiringNext == 1)
            #expect(summary.devicesFallingBehind.map(\.tokenID) == [phone.tokenID])
            #expect(try await store.admin.retention(tombstoneSeconds: 200 * 86_400, secondsToNextPrune: 3_600).devicesFallingBehind.isEmpty)

            let storage = try await store.admin.storage()
            #expect(storage.databases.count == 1 && storage.databases.first?.records == 2 && storage.databases.first?.tombstones == 1)
            #expect(storage.orphans == 0 && storage.largestAssets.isEmpty)
            #expect(try await store.admin.lastPrune() == nil)
            var options = PruneOptions()
            options.tombstonesOlderThanSeconds = 90 * 86_400
            _ = try await store.pruner.prune(options)
            #expect(try await store.admin.lastPrune()?.tombstones == 1)
        }
    }
}
