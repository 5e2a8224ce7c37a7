import Foundation
import NimbusCore
import NimbusPostgres
@testable import NimbusStore
import NimbusSupport
import NimbusTestSupport
import Testing

/// The operators' views of push (docs/push.md "For operators"): the delivery log by user and
/// device token, registrations with a shortened APNs token and their last outcome, the queue,
/// and the counters the store keeps.
@Suite struct PushReportTests {
    typealias Outbox = PushOutboxTests

    @Test func theLogIsNewestFirstPerUserOrDeviceTokenWithEveryColumn() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture)
            let outbox = setup.store.pushOutbox, report = setup.store.pushReport
            try await Outbox.create(setup.store, setup.mac, ["n1", "n2"])
            let now = setup.clock.nowMilliseconds()
            let claimed = try await outbox.claimDuePushes(limit: 10, now: now)
            try #require(claimed.count == 2)
            try await outbox.recordOutcome(claimed[0], answer: PushAnswer(status: 200), now: now + 1)
            try await outbox.recordOutcome(claimed[1], answer: PushAnswer(status: 400, reason: "BadCollapseId"), now: now + 2)

            let entries = try await report.log(.user("alice"), limit: 10)
            #expect(entries.map(\.outcome) == ["failed", "delivered"])
            let failed = try #require(entries.first)
            #expect(failed.at == now + 2)
            #expect(failed.user == "alice")
            #expect(failed.deviceTokenID == setup.phone.tokenID)
            #expect(failed.deviceName == "phone")
            #expect(failed.container == Outbox.container)
            #expect(failed.environment == "development")
            #expect(failed.notificationID == claimed[1].notificationID)
            #expect(failed.pushType == "alert")
            #expect(failed.status == 400)
            #expect(failed.reason == "BadCollapseId")
            #expect(failed.attempts == 1)
            #expect(!failed.byLongPoll)
            #expect(try await report.log(.user("alice"), limit: 1).map(\.outcome) == ["failed"])
            #expect(try await report.log(.deviceToken(setup.phone.tokenID), limit: 10).count == 2)
            #expect(try await report.log(.deviceToken(setup.mac.tokenID), limit: 10).isEmpty)
            #expect(try await report.log(.user("bob"), limit: 10).isEmpty)
            #expect(try await report.log(.everyone, limit: 10).count == 2)
        }
    }

    @Test func anUnknownUserOrDeviceTokenIsNotFoundNamingIt() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture)
            for (scope, named) in [(PushLogScope.user("carol"), "carol"), (.deviceToken("tok_nothing"), "tok_nothing")] {
                do {
                    _ = try await setup.store.pushReport.log(scope, limit: 10)
                    Issue.record("\(scope) was found")
                } catch let error as SyncError {
                    #expect(error.code == .notFound)
                    #expect(error.reason.contains(named))
                }
            }
            await #expect(throws: SyncError.self) { _ = try await setup.store.pushReport.registrations(user: "carol", limit: 10) }
        }
    }

    @Test func registrationsShowTheTokenShortenedTheirQueueAndTheLastOutcome() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture)
            let report = setup.store.pushReport
            try await Outbox.create(setup.store, setup.mac, ["n1", "n2"])
            let now = setup.clock.nowMilliseconds()
            let push = try #require(try await setup.store.pushOutbox.claimDuePushes(limit: 1, now: now).first)
            try await setup.store.pushOutbox.recordOutcome(push, answer: PushAnswer(status: 500, reason: "InternalServerError"), now: now)

            let (total, listed) = try await report.registrations(user: nil, limit: 10)
            #expect(total == 3)
            #expect(listed.map { "\($0.user)/\($0.deviceName)" } == ["alice/mac", "alice/phone", "bob/phone"])
            let phone = try #require(listed.first { $0.deviceTokenID == setup.phone.tokenID })
            #expect(phone.apnsTokenStart == String(Outbox.phoneToken.prefix(8)))
            #expect(phone.queued == 2)
            #expect(phone.lastOutcome == "retry")
            #expect(phone.lastStatus == 500)
            #expect(phone.lastReason == "InternalServerError")
            #expect(phone.lastAt == now)
            #expect(phone.apnsEnvironment == "production")
            let mac = try #require(listed.first { $0.deviceTokenID == setup.mac.tokenID })
            #expect(mac.queued == 0 && mac.lastOutcome == nil)

            let bobs = try await report.registrations(user: "bob", limit: 10)
            #expect(bobs.total == 1 && bobs.listed.map(\.deviceTokenID) == [setup.bobPhone.tokenID])
            #expect(try await report.registrations(user: nil, limit: 1).listed.count == 1)
            // A revoked token's registration is gone from the list.
            try await setup.store.accounts.revokeToken(tokenID: setup.phone.tokenID)
            #expect(try await report.registrations(user: "alice", limit: 10).listed.map(\.deviceTokenID) == [setup.mac.tokenID])
        }
    }

    @Test func theQueueCountsWaitingPushesAndAgesTheOldestOnTheStoreClock() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture)
            let report = setup.store.pushReport
            let empty = try await report.queue()
            #expect(empty.depth == 0 && empty.oldestCreatedAt == nil && empty.oldestAgeMillis == 0)
            let first = setup.clock.nowMilliseconds()
            try await Outbox.create(setup.store, setup.mac, ["n1"])
            setup.clock.advance(milliseconds: 5_000)
            try await Outbox.create(setup.store, setup.mac, ["n2"])
            _ = try await setup.store.pushOutbox.claimDuePushes(limit: 1)
            setup.clock.advance(milliseconds: 2_000)
            let queue = try await report.queue()
            #expect(queue.depth == 2)
            #expect(queue.sending == 1)
            #expect(queue.oldestCreatedAt == first)
            #expect(queue.oldestAgeMillis == 7_000)
        }
    }

    @Test func theStoreCountsQueuedPushesOnlyWhenTheirWriteCommitsAndPushesSkippedByLongPoll() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Outbox.setUp(fixture)
            let counters = setup.store.pushCounters
            try await Outbox.create(setup.store, setup.mac, ["n1", "n2"])
            #expect(counters.snapshot.queued == 2)
            // A write that rolls back queued nothing.
            let request = RecordWriteRequest(session: setup.mac, zoneName: "_defaultZone", operations: [operation(.create, "n3")],
                                             atomic: true, limits: Limits())
            await #expect(throws: Outbox.Failure.self) {
                _ = try await LockedWrite(alongside: { _ in throw Outbox.Failure() }).write(request, in: setup.store.records)
            }
            #expect(counters.snapshot.queued == 2)
            _ = try await fixture.run { try $0.run("UPDATE push_outbox SET long_poll_first = true") }
            let sequence = try await setup.store.notifications.currentNotificationSequence(databaseID: setup.mac.databaseID)
            #expect(try await setup.store.pushOutbox.deliveredByLongPoll(setup.phone, upTo: sequence) == 2)
            #expect(counters.snapshot.skippedByLongPoll == 2)
            #expect(try await setup.store.pushReport.log(.user("alice"), limit: 10).map(\.byLongPoll) == [true, true])
        }
    }
}
