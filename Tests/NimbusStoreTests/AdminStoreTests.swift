import Foundation
import NimbusCore
import NimbusStore
import NimbusSupport
import NimbusTestSupport
import Testing

/// Admin tokens and the audit trail against a real database.
@Suite struct AdminStoreTests {
    @Test func adminTokensAuthenticateUntilRevokedAndAreNotDeviceTokens() async throws {
        try await StoreFixture.with { fixture in
            let admin = fixture.store.admin
            let token = try await admin.issueToken(name: "ops")
            #expect(token.tokenID.hasPrefix("adm_"))
            let identity = try await admin.identity(tokenDigest: AccountStore.tokenDigest(token.secret))
            #expect(identity == AdminIdentity(tokenID: token.tokenID, name: "ops"))
            #expect(try await admin.listTokens().first?.lastUsedAt != nil, "a use is recorded")
            _ = try await fixture.store.accounts.addUser(name: "ann")
            let device = try await fixture.store.accounts.issueToken(user: "ann", device: "phone")
            #expect(try await admin.identity(tokenDigest: AccountStore.tokenDigest(device.secret)) == nil)
            try await admin.revokeToken(tokenID: token.tokenID)
            #expect(try await admin.identity(tokenDigest: AccountStore.tokenDigest(token.secret)) == nil)
            await #expect(throws: SyncError.self) { try await admin.revokeToken(tokenID: token.tokenID) }
            await #expect(throws: SyncError.self) { try await admin.revokeToken(tokenID: "adm_unknown") }
            await #expect(throws: SyncError.self) { try await admin.issueToken(name: "") }
        }
    }

    @Test func theAuditTrailKeepsWhoWhatAndWhenNewestFirst() async throws {
        try await StoreFixture.with { fixture in
            let admin = fixture.store.admin
            let ops = AdminIdentity(tokenID: "adm_a", name: "ops")
            try await admin.audit(AdminAudit(ops, action: "device.revoke", target: "tok_1"))
            try await admin.audit(AdminAudit(ops, action: "device.pair", target: "ann", detail: ["deviceName": "iPad \"2\""]))
            let trail = try await admin.auditTrail(limit: 10)
            #expect(trail.map(\.action) == ["device.pair", "device.revoke"])
            #expect(trail.first?.adminName == "ops" && trail.first?.target == "ann")
            #expect(try JSONValue.parse(Array(trail.first?.detail.utf8 ?? "".utf8))["deviceName"]?.stringValue == "iPad \"2\"")
            #expect(try await admin.auditTrail(limit: 1).count == 1)
        }
    }
}
