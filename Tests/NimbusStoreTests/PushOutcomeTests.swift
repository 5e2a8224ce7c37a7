import Foundation
import NimbusCore
import NimbusPostgres
@testable import NimbusStore
import NimbusSupport
import NimbusTestSupport
import Testing

/// What each outcome does to the outbox, the registrations and the delivery log; registrations
/// moving between device tokens and dying with them.
@Suite struct PushOutcomeTests {
    typealias Outbox = PushOutboxTests

    static func log(_ fixture: StoreFixture) async throws -> [String] {
        try await fixture.run { connection in
            try connection.query("SELECT outcome, coalesce(status::text, '-'), attempts FROM push_log ORDER BY id") {
                "\(try $0.string(0)) \(try $0.string(1)) \(try $0.int(2))"
            }
        }
    }

    static func count(_ fixture: StoreFixture, _ table: String) async throws -> Int {
        try await fixture.run { try $0.queryFirst("SELECT count(*) FROM \(identifier: table)") { try $0.int(0) } ?? -1 }
    }

    @Test func deliveredRetriedAndGivenUpPushesLeaveTheirOutcomeInTheLog() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture)
            let outbox = setup.store.pushOutbox
            try await Outbox.create(setup.store, setup.mac, ["n1", "n2"])
            let now = setup.clock.nowMilliseconds()
            let claimed = try await outbox.claimDuePushes(limit: 10, now: now)
            #expect(claimed.count == 2)
            #expect(try await outbox.recordOutcome(claimed[0], answer: PushAnswer(status: 200), now: now) == .delivered)
            #expect(try await outbox.recordOutcome(claimed[1], answer: PushAnswer(status: 503, retryAfterSeconds: 5), now: now) == .retry(at: now + 5_000))
            #expect(try await Self.count(fixture, "push_outbox") == 1)
            // Due again at the retry time, not a millisecond before, as attempt 2 with the same apns-id.
            #expect(try await outbox.claimDuePushes(limit: 10, now: now + 4_999).isEmpty)
            let retried = try #require(try await outbox.claimDuePushes(limit: 10, now: now + 5_000).first)
            #expect(retried.attempt == 2)
            #expect(retried.apnsID == claimed[1].apnsID)
            #expect(try await outbox.recordOutcome(retried, answer: PushAnswer(status: 400, reason: "BadCollapseId"), now: now + 5_000) == .giveUp)
            #expect(try await Self.count(fixture, "push_outbox") == 0)
            #expect(try await Self.log(fixture) == ["delivered 200 1", "retry 503 1", "failed 400 2"])
            // GET /devices' last attempt is the newest entry.
            let summary = try #require(try await setup.store.pushRegistrations.registrations(userID: setup.phone.userID)[setup.phone.tokenID]?.first)
            #expect(summary.lastStatus == 400)
            #expect(summary.lastReason == "BadCollapseId")
            #expect(summary.lastAttemptAt == now + 5_000)
        }
    }

    @Test func aBatchOfOutcomesIsRecordedTogetherEachOnlyWithItsLease() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture)
            let outbox = setup.store.pushOutbox
            try await Outbox.create(setup.store, setup.mac, ["n1", "n2", "n3", "n4"])
            let now = setup.clock.nowMilliseconds()
            let claimed = try await outbox.claimDuePushes(limit: 10, now: now)
            #expect(claimed.count == 4)
            // n4's lease ran out and another sender claimed it again: its late outcome only logs.
            let again = try #require(try await outbox.claimDuePushes(limit: 1, now: now + PushOutboxStore.leaseMillis).first)
            #expect(again.outboxID == claimed[0].outboxID)
            let decisions = try await outbox.recordOutcomes([
                (claimed[0], PushAnswer(status: 200)), (claimed[1], PushAnswer(status: 503, retryAfterSeconds: 5)),
                (claimed[2], PushAnswer(status: nil)), (claimed[3], PushAnswer(status: 400, reason: "BadCollapseId")),
            ], now: now + PushOutboxStore.leaseMillis)
            let later = now + PushOutboxStore.leaseMillis
            #expect(decisions == [.delivered, .retry(at: later + 5_000), .retry(at: later + PushRetryPolicy.firstDelayMillis), .giveUp])
            // claimed[0]'s row is the second claim's now: it stays; the retries wait; the given-up one left.
            let left = try await fixture.run { connection in
                try connection.query("SELECT id, state, attempts FROM push_outbox ORDER BY id") { "\(try $0.int64(0)) \(try $0.string(1)) \(try $0.int(2))" }
            }
            #expect(left == ["\(claimed[0].outboxID) sending 2", "\(claimed[1].outboxID) queued 1", "\(claimed[2].outboxID) queued 1"])
            #expect(try await Self.log(fixture) == ["delivered 200 1", "retry 503 1", "retry - 1", "failed 400 1"])
            #expect(try await outbox.recordOutcomes([]).isEmpty)
        }
    }

    @Test func aStaleLeaseChangesOnlyTheLog() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture)
            let outbox = setup.store.pushOutbox
            try await Outbox.create(setup.store, setup.mac, ["n1"])
            let now = setup.clock.nowMilliseconds()
            let first = try #require(try await outbox.claimDuePushes(limit: 1, now: now).first)
            let second = try #require(try await outbox.claimDuePushes(limit: 1, now: now + PushOutboxStore.leaseMillis).first)
            #expect(second.attempt == 2)
            try await outbox.recordOutcome(first, answer: PushAnswer(status: 200), now: now + PushOutboxStore.leaseMillis)
            #expect(try await Self.count(fixture, "push_outbox") == 1, "the late outcome of the first claim removed the second's push")
            try await outbox.recordOutcome(second, answer: PushAnswer(status: 200), now: now + PushOutboxStore.leaseMillis)
            #expect(try await Self.count(fixture, "push_outbox") == 0)
        }
    }

    @Test func aDeadTokenLosesItsRegistrationAndItsQueuedPushes() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture)
            let outbox = setup.store.pushOutbox
            try await Outbox.create(setup.store, setup.mac, ["n1", "n2"])
            let push = try #require(try await outbox.claimDuePushes(limit: 1).first)
            #expect(try await outbox.recordOutcome(push, answer: PushAnswer(status: 410, reason: "Unregistered")) == .removeRegistration)
            #expect(try await setup.store.pushRegistrations.registrations(userID: setup.phone.userID)[setup.phone.tokenID] == nil)
            #expect(try await Self.count(fixture, "push_outbox") == 0)
            #expect(try await Self.log(fixture) == ["removed 410 1"])
        }
    }

    @Test func expiredAndRevokedPushesAreDroppedWhenDue() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture)
            try await Outbox.create(setup.store, setup.mac, ["n1"])
            let week: Int64 = 7 * 86_400_000
            #expect(try await setup.store.pushOutbox.claimDuePushes(limit: 10, now: setup.clock.nowMilliseconds() + week).isEmpty)
            #expect(try await Self.log(fixture) == ["expired-queued - 0"])
            // A revocation by a binary that does not remove registrations: the push is not sent.
            try await Outbox.create(setup.store, setup.mac, ["n2"])
            let phone = setup.phone.tokenID
            _ = try await fixture.run { try $0.run("UPDATE device_tokens SET revoked_at = now() WHERE token_id = \(phone)") }
            #expect(try await setup.store.pushOutbox.claimDuePushes(limit: 10).isEmpty)
            #expect(try await Self.log(fixture) == ["expired-queued - 0", "revoked - 0"])
        }
    }

    @Test func anAPNsTokenMovesToTheDeviceTokenThatRegistersIt() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture)
            let registrations = setup.store.pushRegistrations
            let tablet = try await fixture.session(user: "carol", device: "tablet")
            try await registrations.register(tablet, PushRegistrationRequest(apnsEnvironment: .development, apnsToken: Outbox.phoneToken))
            #expect(try await registrations.registrations(userID: setup.phone.userID)[setup.phone.tokenID] == nil)
            let moved = try #require(try await registrations.registrations(userID: tablet.userID)[tablet.tokenID])
            #expect(moved.map(\.apnsEnvironment) == [.development])
            // Registering again replaces; another environment is another registration.
            try await registrations.register(tablet, PushRegistrationRequest(apnsEnvironment: .production, apnsToken: String(repeating: "cd", count: 32)))
            var production = tablet
            production.environment = .production
            try await registrations.register(production, PushRegistrationRequest(apnsEnvironment: .production, apnsToken: Outbox.phoneToken))
            let now = try #require(try await registrations.registrations(userID: tablet.userID)[tablet.tokenID])
            #expect(now.map(\.environment) == [.development, .production])
            #expect(try await registrations.unregister(tablet))
            #expect(try await !registrations.unregister(tablet))
        }
    }

    @Test(arguments: ["device", "admin"])
    func aRevokedDeviceTokenLosesItsRegistrationsAtOnce(path: String) async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture)
            try await Outbox.create(setup.store, setup.mac, ["n1"])
            #expect(try await Self.count(fixture, "push_outbox") == 1)
            if path == "device" {
                try await setup.store.devices.revoke(tokenID: setup.phone.tokenID, userID: setup.phone.userID)
            } else {
                try await setup.store.accounts.revokeToken(tokenID: setup.phone.tokenID)
            }
            let phone = setup.phone.tokenID
            #expect(try await fixture.run {
                try $0.queryFirst("SELECT count(*) FROM push_registrations WHERE device_token_id = \(phone)") { try $0.int(0) }
            } == 0)
            #expect(try await Self.count(fixture, "push_outbox") == 0)
            await #expect(throws: SyncError.self) {
                try await setup.store.pushRegistrations.register(setup.phone, PushRegistrationRequest(apnsEnvironment: .production, apnsToken: Outbox.phoneToken))
            }
            #expect(try await fixture.run {
                try $0.queryFirst("SELECT count(*) FROM push_registrations WHERE device_token_id = \(phone)") { try $0.int(0) }
            } == 0)
        }
    }

    @Test func longPollFirstDelaysByTheGraceAndAPollPastTheNotificationDropsThePush() async throws {
        // The rule: parked devices wait the grace, others are due at once.
        let written = [PushOutbox.Written(sequence: 7, notificationID: "6f9619ff-8b86-d011-b42d-00c04fc964ff", kind: .alert, zoneName: "z"),
                       PushOutbox.Written(sequence: 8, notificationID: "7f9619ff-8b86-d011-b42d-00c04fc964ff", kind: nil, zoneName: "z")]
        let rows = PushOutbox.rows(written, recipients: [.init(registrationID: 1, deviceTokenID: "tok_parked"), .init(registrationID: 2, deviceTokenID: "tok_asleep")],
                                   now: 1_000, graceMillis: 1_500, isParked: { $0 == "tok_parked" })
        #expect(rows.map(\.dueAt) == [2_500, 1_000])
        #expect(rows.map(\.longPollFirst) == [true, false])

        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture)
            try await Outbox.create(setup.store, setup.mac, ["n1", "n2"])
            _ = try await fixture.run { try $0.run("UPDATE push_outbox SET long_poll_first = true") }
            let sequence = try await setup.store.notifications.currentNotificationSequence(databaseID: setup.mac.databaseID)
            // Polling past the first only drops the first; another device's poll drops nothing.
            #expect(try await setup.store.pushOutbox.deliveredByLongPoll(setup.mac, upTo: sequence) == 0)
            #expect(try await setup.store.pushOutbox.deliveredByLongPoll(setup.phone, upTo: sequence - 1) == 1)
            #expect(try await Self.count(fixture, "push_outbox") == 1)
            #expect(try await Self.log(fixture) == ["long-poll - 0"])
        }
    }
}

/// Background pushes through the device's window, on the store's clock.
@Suite struct PushBackgroundWindowTests {
    typealias Outbox = PushOutboxTests

    @Test func atMostThreeAnHourMergedPerZoneAndHeldUntilTheWindowOpens() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture, notificationInfo: ["shouldSendContentAvailable": true])
            let outbox = setup.store.pushOutbox, clock = setup.clock
            func claim() async throws -> [String] {
                let claimed = try await outbox.claimDuePushes(limit: 10)
                for push in claimed { try await outbox.recordOutcome(push, answer: PushAnswer(status: 200)) }
                return claimed.compactMap { $0.notification["recordName"]?.stringValue }
            }
            let start = clock.nowMilliseconds()
            try await Outbox.create(setup.store, setup.mac, ["n1", "n2"])
            #expect(try await claim() == ["n2"], "two due together in one zone: the latest goes")
            clock.advance(milliseconds: 60_000)
            try await Outbox.create(setup.store, setup.mac, ["n3"])
            #expect(try await claim() == ["n3"])
            try await Outbox.create(setup.store, setup.mac, ["n4"])
            #expect(try await claim() == ["n4"])
            try await Outbox.create(setup.store, setup.mac, ["n5"])
            #expect(try await claim() == [], "a fourth inside the hour is held")
            clock.advance(milliseconds: 60_000)
            try await Outbox.create(setup.store, setup.mac, ["n6"])
            #expect(try await claim() == [])
            clock.advance(milliseconds: start + PushOutboxTests.hour - clock.nowMilliseconds() - 1)
            #expect(try await claim() == [], "still held 1 ms before the first send is an hour old")
            clock.advance(milliseconds: 1)
            #expect(try await claim() == ["n6"], "when the window opens the latest held one goes")
            let outcomes = try await PushOutcomeTests.log(fixture).map { $0.split(separator: " ")[0] }
            #expect(outcomes.filter { $0 == "merged" }.count == 2)
            #expect(outcomes.filter { $0 == "delivered" }.count == 4)
            #expect(try await PushOutcomeTests.count(fixture, "push_outbox") == 0)
        }
    }
}

/// The delivery log is kept as long as notifications, then pruned.
@Suite struct PushLogPruningTests {
    @Test func thePrunerRemovesOldLogEntriesAndRegistrationsOfRevokedTokens() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await PushOutboxTests.setUp(fixture)
            try await PushOutboxTests.create(setup.store, setup.mac, ["n1"])
            let outbox = setup.store.pushOutbox
            let push = try #require(try await outbox.claimDuePushes(limit: 1).first)
            let now = setup.clock.nowMilliseconds()
            let retention: Int64 = 7 * 86_400_000
            try await outbox.recordOutcome(push, answer: PushAnswer(status: 500), now: now - retention - 1)
            try await outbox.recordOutcome(push, answer: PushAnswer(status: 200), now: now - retention + 60_000)
            let report = try #require(try await setup.store.pruner.prune(PruneOptions()))
            #expect(report.pushLogEntries == 1)
            #expect(try await PushOutcomeTests.log(fixture) == ["delivered 200 1"])
            // A registration an older binary's revocation left behind goes too.
            let phone = setup.phone.tokenID
            _ = try await fixture.run { try $0.run("UPDATE device_tokens SET revoked_at = now() WHERE token_id = \(phone)") }
            _ = try await setup.store.pruner.prune(PruneOptions())
            #expect(try await fixture.run {
                try $0.queryFirst("SELECT count(*) FROM push_registrations WHERE device_token_id = \(phone)") { try $0.int(0) }
            } == 0)
        }
    }
}

/// A push whose container lost its topic before it was sent is dropped, not sent.
@Suite struct PushTopicTests {
    @Test func aContainerWithoutTopicAtClaimTimeDropsItsPushes() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await PushOutboxTests.setUp(fixture)
            try await PushOutboxTests.create(setup.store, setup.mac, ["n1"])
            let other = try await Store.open(pool: fixture.pool, clock: setup.clock, push: PushSettings(mode: .direct, topics: ["iCloud.other": "x.y"]))
            #expect(try await other.pushOutbox.claimDuePushes(limit: 10).isEmpty)
            #expect(try await PushOutcomeTests.log(fixture) == ["no-topic - 0"])
        }
    }
}

/// A registration racing its device token's revocation never outlives it.
@Suite struct PushRegistrationRaceTests {
    @Test func aRegistrationRacingARevocationIsRemovedOrRefused() async throws {
        try await StoreFixture.with(poolSize: 12) { fixture in
            let store = try await Store.open(pool: fixture.pool, push: PushOutboxTests.settings)
            for round in 0..<40 {
                let session = try await fixture.session(user: "alice", device: "phone \(round)")
                let token = String(format: "%064x", round)
                async let registered: Bool = {
                    do {
                        try await store.pushRegistrations.register(session, PushRegistrationRequest(apnsEnvironment: .production, apnsToken: token))
                        return true
                    } catch { return false }
                }()
                async let revoked: Void = store.accounts.revokeToken(tokenID: session.tokenID)
                _ = try await (registered, revoked)
            }
            let left = try await fixture.run { connection in
                try connection.queryFirst("""
                    SELECT count(*) FROM push_registrations r JOIN device_tokens t ON t.token_id = r.device_token_id
                    WHERE t.revoked_at IS NOT NULL
                    """) { try $0.int(0) }
            }
            #expect(left == 0, "registrations of revoked tokens survived the race")
        }
    }
}
