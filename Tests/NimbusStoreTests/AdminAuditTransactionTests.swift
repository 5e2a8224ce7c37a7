import Foundation
import NimbusCore
import NimbusPostgres
import NimbusStore
import NimbusSupport
import NimbusTestSupport
import Testing

/// Each change made through the admin API and its audit entry commit together or not at all.
@Suite struct AdminAuditTransactionTests {
    let ops = AdminIdentity(tokenID: "adm_ops", name: "ops")
    static let schemaFile: JSONValue = ["container": "iCloud.test.App", "recordTypes": ["Note": ["fields": ["title": "STRING"]]]]

    func actions(_ store: Store) async throws -> [String] {
        try await store.admin.auditTrail(limit: 100).map { "\($0.action) \($0.target)" }.reversed()
    }

    @Test func aChangeThatFailsLeavesNoAuditEntry() async throws {
        try await StoreFixture.with { fixture in
            let store = fixture.store, admin = fixture.store.admin
            let mac = try await fixture.session()
            var limits = Limits()
            limits.maxPendingPairingCodes = 1

            await #expect(throws: SyncError.self) { try await admin.revokeDeviceToken(tokenID: "tok_unknown", by: ops) }
            try await admin.revokeDeviceToken(tokenID: mac.tokenID, by: ops)
            await #expect(throws: SyncError.self) { try await admin.revokeDeviceToken(tokenID: mac.tokenID, by: ops) }
            _ = try await admin.pair(user: "alice", deviceNameHint: nil, limits: limits, by: ops)
            await #expect(throws: SyncError.self) { try await admin.pair(user: "alice", deviceNameHint: nil, limits: limits, by: ops) }
            await #expect(throws: SyncError.self) { try await admin.issueDeviceToken(user: "nobody", deviceName: "phone", by: ops) }
            await #expect(throws: SyncError.self) { try await admin.deploySchema(container: "iCloud.test.App", by: ops) }
            try await admin.importSchema(try ContainerSchema.parseFile(Self.schemaFile), environment: .development, by: ops)
            let retyped: JSONValue = ["container": "iCloud.test.App", "recordTypes": ["Note": ["fields": ["title": "INT64"]]]]
            await #expect(throws: SyncError.self) {
                try await admin.importSchema(try ContainerSchema.parseFile(retyped), environment: .development, by: ops)
            }
            let browse = RecordBrowse(user: "alice", container: "iCloud.test.App", environment: .development, zoneName: "_defaultZone")
            let writer = try await fixture.session(device: "writer")
            _ = try await store.records.modifyRecords(writer, zoneName: "_defaultZone", operations: [
                .success(RecordOperation(kind: .create, recordName: "n1", recordType: "Note", fields: [RawField(name: "title", value: .string("a"))])),
            ], atomic: true, limits: Limits())
            // A delete of a record that is not there changes nothing, so it leaves no entry either.
            try await admin.deleteRecord(browse, recordName: "missing", by: ops, limits: Limits())
            var elsewhere = browse
            elsewhere.zoneName = "Missing"
            await #expect(throws: SyncError.self) { try await admin.deleteRecord(elsewhere, recordName: "n1", by: ops, limits: Limits()) }

            #expect(try await actions(store) == ["device.revoke \(mac.tokenID)", "device.pair alice", "schema.import iCloud.test.App"])
        }
    }

    @Test func anAuditEntryThatFailsUndoesItsChange() async throws {
        try await StoreFixture.with { fixture in
            let store = fixture.store, admin = fixture.store.admin
            let mac = try await fixture.session()
            try await store.schemas.importSchema(try ContainerSchema.parseFile(Self.schemaFile), environment: .development)
            _ = try await store.records.modifyRecords(mac, zoneName: "_defaultZone", operations: [
                .success(RecordOperation(kind: .create, recordName: "n1", recordType: "Note", fields: [RawField(name: "title", value: .string("a"))])),
            ], atomic: true, limits: Limits())
            // Every audit insert fails from here on, after the change's own statements ran.
            try await fixture.run { try $0.run("ALTER TABLE admin_audit RENAME TO admin_audit_elsewhere") }

            await #expect(throws: (any Error).self) { try await admin.revokeDeviceToken(tokenID: mac.tokenID, by: ops) }
            #expect(try await store.accounts.listTokens(user: "alice").allSatisfy { $0.revokedAt == nil }, "the token is still live")

            await #expect(throws: (any Error).self) { try await admin.pair(user: "alice", deviceNameHint: "ipad", limits: Limits(), by: ops) }
            #expect(try await fixture.run { try $0.queryFirst("SELECT count(*) FROM pairing_codes") { try $0.int64(0) } } == 0, "no code")

            await #expect(throws: (any Error).self) { try await admin.issueDeviceToken(user: "alice", deviceName: "phone", by: ops) }
            #expect(try await store.accounts.listTokens(user: "alice").map(\.deviceName) == ["mac"], "no new token")

            let other: JSONValue = ["container": "iCloud.test.Other", "recordTypes": ["Task": ["fields": ["done": "INT64"]]]]
            await #expect(throws: (any Error).self) {
                try await admin.importSchema(try ContainerSchema.parseFile(other), environment: .development, by: ops)
            }
            #expect(try await store.schemas.schema(container: "iCloud.test.Other", environment: .development).recordTypes.isEmpty, "not imported")

            await #expect(throws: (any Error).self) { try await admin.deploySchema(container: "iCloud.test.App", by: ops) }
            #expect(try await store.schemas.schema(container: "iCloud.test.App", environment: .production).recordTypes.isEmpty, "not deployed")

            let browse = RecordBrowse(user: "alice", container: "iCloud.test.App", environment: .development, zoneName: "_defaultZone")
            await #expect(throws: (any Error).self) { try await admin.deleteRecord(browse, recordName: "n1", by: ops, limits: Limits()) }
            #expect(try await admin.browse(browse).records.map(\.recordName) == ["n1"], "the record is still live")
        }
    }
}
