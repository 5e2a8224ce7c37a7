import NimbusTestSupport
import Foundation
import NimbusCore
import NimbusPostgres
@testable import NimbusStore
import NimbusSupport
import Testing

/// Pairing and enrollment against PostgreSQL; two stores over one database stand for two instances.
@Suite struct DeviceStoreTests {
    final class ManualWallClock: WallClock, @unchecked Sendable {
        private let lock = Lock<Int64>(1_800_000_000_000)
        func nowMilliseconds() -> Int64 { lock.withLock { $0 } }
        func advance(milliseconds: Int64) { lock.withLock { $0 += milliseconds } }
    }

    @Test func aCodeFromOneInstanceEnrollsOnAnotherOnceAndExpiresOnTheTestClock() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session(user: "alice", device: "mac")
            let clock = ManualWallClock()
            let first = try await Store.open(pool: fixture.pool, clock: clock)
            let second = try await Store.open(pool: fixture.pool, clock: clock)
            var limits = Limits()
            limits.pairingCodeSeconds = 600
            let issued = try await first.devices.pair(userID: session.userID, byToken: session.tokenID, deviceNameHint: "iphone", limits: limits)
            #expect(issued.expiresAt == clock.nowMilliseconds() + 600_000)
            let enrolled = try #require(try await second.devices.enroll(code: issued.code, deviceName: "iphone"))
            #expect(enrolled.userRecordName == session.userRecordName)
            let digest = AccountStore.tokenDigest(enrolled.token.secret)
            #expect(try await second.accounts.session(tokenDigest: digest, container: "iCloud.x", environment: .development) != nil)
            #expect(try await first.devices.enroll(code: issued.code, deviceName: "iphone 2") == nil)

            // Expiry: two codes issued at one instant (enrolling spends one); the first still
            // enrolls at N - 1 ms, the second is refused at N like a wrong code. A code that
            // expired even 1 ms early fails the first half, one that lived on the second.
            let tried = try await first.devices.pair(userID: session.userID, byToken: nil, deviceNameHint: nil, limits: limits)
            let expired = try await first.devices.pair(userID: session.userID, byToken: nil, deviceNameHint: nil, limits: limits)
            clock.advance(milliseconds: 599_999)
            #expect(try await second.devices.enroll(code: tried.code, deviceName: "tablet") != nil)
            clock.advance(milliseconds: 1)
            #expect(try await second.devices.enroll(code: expired.code, deviceName: "laptop") == nil)
            let stored = try await fixture.run { connection in
                try connection.query("SELECT encode(code_sha256, 'hex') FROM pairing_codes") { try $0.string(0) }
            }
            #expect(stored.count == 3)
            #expect(!stored.contains(Hex.encode(Array(issued.code.text.utf8))))
        }
    }

    @Test func concurrentEnrollmentsWithOneCodeMakeExactlyOneToken() async throws {
        try await StoreFixture.with(poolSize: 12) { fixture in
            let session = try await fixture.session(user: "alice", device: "mac")
            for round in 0..<5 {
                let issued = try await fixture.store.devices.pair(userID: session.userID, byToken: nil, deviceNameHint: nil, limits: Limits())
                let store = fixture.store
                let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for racer in 0..<8 {
                        group.addTask { try await store.devices.enroll(code: issued.code, deviceName: "phone \(round).\(racer)") != nil }
                    }
                    return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                }
                #expect(winners == 1)
            }
            let tokens = try await fixture.run { try $0.queryFirst("SELECT count(*) FROM device_tokens") { try $0.int(0) } }
            #expect(tokens == 6)
        }
    }

    @Test func theCapOfPendingCodesAndANameInUseLeaveNothingBehind() async throws {
        try await StoreFixture.with { fixture in
            let session = try await fixture.session(user: "alice", device: "mac")
            var limits = Limits()
            limits.maxPendingPairingCodes = 2
            let devices = fixture.store.devices
            let code = try await devices.pair(userID: session.userID, byToken: nil, deviceNameHint: nil, limits: limits).code
            _ = try await devices.pair(userID: session.userID, byToken: nil, deviceNameHint: nil, limits: limits)
            await #expect(throws: SyncError.self) {
                try await devices.pair(userID: session.userID, byToken: nil, deviceNameHint: nil, limits: limits)
            }
            await #expect(throws: SyncError.self) { try await devices.enroll(code: code, deviceName: "mac") }
            #expect(try await devices.enroll(code: code, deviceName: "phone") != nil)
            // A used code no longer counts toward the cap.
            _ = try await devices.pair(userID: session.userID, byToken: nil, deviceNameHint: nil, limits: limits)
        }
    }

    @Test func aUserRevokesTheirOwnTokensOnly() async throws {
        try await StoreFixture.with { fixture in
            let alice = try await fixture.session(user: "alice", device: "mac")
            let phone = try await fixture.session(user: "alice", device: "phone")
            let bob = try await fixture.session(user: "bob", device: "mac")
            let devices = fixture.store.devices
            #expect(try await devices.devices(userID: alice.userID).map(\.tokenID) == [alice.tokenID, phone.tokenID])
            await #expect(throws: SyncError.self) { try await devices.revoke(tokenID: bob.tokenID, userID: alice.userID) }
            try await devices.revoke(tokenID: phone.tokenID, userID: alice.userID)
            try await devices.revoke(tokenID: phone.tokenID, userID: alice.userID)
            #expect(try await devices.devices(userID: alice.userID).map(\.tokenID) == [alice.tokenID])
            #expect(try await devices.devices(userID: bob.userID).count == 1)
        }
    }
}
