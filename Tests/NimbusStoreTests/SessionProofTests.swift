import Foundation
import NimbusCore
import NimbusSupport
@testable import NimbusStore
import Testing
import NimbusTestSupport

/// A session taken from the cache (`SessionProof.cached`) is only as good as its bearer token:
/// every path that starts from one checks the token; a `.verified` session is not checked again.
@Suite struct SessionProofTests {
    let limits = Limits()

    @Test func aCachedSessionOfARevokedTokenWritesAndReadsNothing() async throws {
        try await StoreFixture.with { fixture in
            let mac = try await fixture.session()
            let token = try await fixture.store.accounts.issueToken(user: "alice", device: "phone")
            let digest = AccountStore.tokenDigest(token.secret)
            guard let phone = try await fixture.store.accounts.session(tokenDigest: digest, container: mac.container,
                                                                       environment: mac.environment) else {
                Issue.record("no session for the phone"); return
            }
            let records = fixture.store.records, cached = SessionProof.cached(tokenDigest: digest)
            // Live: writes (a create; a delete, which takes the locked write) and a read from the cached session work.
            _ = try await records.modifyRecords(phone, zoneName: "_defaultZone", operations: [operation(.create, "n1", ["v": 1]),
                                                                                             operation(.create, "n2", ["v": 2])],
                                                atomic: false, limits: limits, proof: cached)
            let deleted = try await records.modifyRecords(phone, zoneName: "_defaultZone", operations: [operation(.forceDelete, "n2")],
                                                          atomic: false, limits: limits, proof: cached)
            #expect("\(deleted)".contains("deleted"), "\(deleted)")
            let live = try await records.recordChanges(phone, zoneName: "_defaultZone", token: nil, limit: 10, desiredRecordTypes: nil,
                                                       proof: cached)
            #expect(live.records.map(\.recordName) == ["n1"])

            try await fixture.store.accounts.revokeToken(tokenID: phone.tokenID)
            for operations in [[operation(.create, "n3")], [operation(.forceDelete, "n1")]] {
                await #expect(throws: SyncError.self, "\(operations)") {
                    _ = try await records.modifyRecords(phone, zoneName: "_defaultZone", operations: operations, atomic: false,
                                                        limits: limits, proof: cached)
                }
            }
            await #expect(throws: SyncError.self) {
                _ = try await records.recordChanges(phone, zoneName: "_defaultZone", token: nil, limit: 10, desiredRecordTypes: nil,
                                                    proof: cached)
            }
            await #expect(throws: SyncError.self) { _ = try await fixture.store.accounts.verify(phone, proof: cached) }
            // Nothing was written after the revocation; a verified session is taken as it is.
            #expect(try await fixture.store.accounts.verify(phone, proof: .verified) == phone)
            let after = try await records.recordChanges(mac, zoneName: "_defaultZone", token: nil, limit: 10, desiredRecordTypes: nil)
            #expect(after.records.map(\.recordName) == ["n1"])
        }
    }
}
