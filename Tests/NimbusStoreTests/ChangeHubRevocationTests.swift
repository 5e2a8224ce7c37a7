import NimbusCore
import NimbusStore
import Synchronization
import Testing

/// The hub's side of revocation: a revoked token's parked requests are answered, nobody else's,
/// and the token parks no more.
@Suite struct ChangeHubRevocationTests {
    /// A parked request that counts what the hub told it.
    final class Waiter: ParkedRequest {
        let revocations = Atomic<Int>(0)
        let expirations = Atomic<Int>(0)
        func wake(_ event: ChangeEvent?) {}
        func heartbeat() {}
        func expire() { expirations.add(1, ordering: .relaxed) }
        func revoked() { revocations.add(1, ordering: .relaxed) }
    }

    @Test func revokingATokenAnswersOnlyItsOwnParkedRequests() throws {
        let hub = ChangeHub()
        let old = [Waiter(), Waiter()], renamed = Waiter(), other = Waiter()
        // The revoked token's device name already belongs to a new token of the same user.
        for waiter in old {
            _ = try hub.park(waiter, databaseID: 1, deviceKey: "1/phone", tokenID: "tok_old", wait: 30, heartbeat: 20)
        }
        _ = try hub.park(renamed, databaseID: 1, deviceKey: "1/phone", tokenID: "tok_new", wait: 30, heartbeat: 20)
        _ = try hub.park(other, databaseID: 2, deviceKey: "2/mac", tokenID: "tok_other", wait: 30, heartbeat: 20)
        #expect(hub.parkedTokenIDs == ["tok_old", "tok_new", "tok_other"])
        hub.revoke(tokenID: "tok_old")
        #expect(old.map { $0.revocations.load(ordering: .relaxed) } == [1, 1])
        #expect(renamed.revocations.load(ordering: .relaxed) == 0 && other.revocations.load(ordering: .relaxed) == 0)
        #expect((old + [renamed, other]).allSatisfy { $0.expirations.load(ordering: .relaxed) == 0 })
        hub.revoke(tokenID: "tok_unknown")
        #expect(hub.count == 4, "the requests remove themselves once answered")
    }

    @Test func aRevokedTokenParksNoMoreButOthersDo() throws {
        let hub = ChangeHub()
        hub.revoke(tokenID: "tok_old")
        #expect(throws: SyncError(.authenticationFailed, "The bearer token is unknown or revoked.")) {
            _ = try hub.park(Waiter(), databaseID: 1, deviceKey: "1/phone", tokenID: "tok_old", wait: 30, heartbeat: 20)
        }
        let ticket = try hub.park(Waiter(), databaseID: 1, deviceKey: "1/phone", tokenID: "tok_new", wait: 30, heartbeat: 20)
        hub.remove(ticket)
        #expect(hub.parkedTokenIDs.isEmpty && hub.count == 0)
    }
}
