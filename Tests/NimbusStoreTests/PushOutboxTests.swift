import Foundation
import NimbusCore
import NimbusPostgres
@testable import NimbusStore
import NimbusSupport
import NimbusTestSupport
import Testing

/// The push outbox against PostgreSQL (docs/push.md "Registrations and the outbox"): rows written
/// in the notification's transaction, claimed once across claimers, ended by their outcomes.
@Suite struct PushOutboxTests {
    final class ManualClock: WallClock, @unchecked Sendable {
        // The lock guards the only state.
        private let lock = Lock<Int64>(1_800_000_000_000)
        func nowMilliseconds() -> Int64 { lock.withLock { $0 } }
        func advance(milliseconds: Int64) { lock.withLock { $0 += milliseconds } }
    }

    static let container = "iCloud.test.App"
    static let settings = PushSettings(mode: .direct, topics: [container: "com.test.App"])
    static let phoneToken = String(repeating: "ab", count: 32)
    static let hour: Int64 = 3_600_000

    /// alice's mac (the writer) and phone, bob's phone, each registered; a push-on store.
    struct Setup {
        var store: Store
        var clock: ManualClock
        var mac: Session
        var phone: Session
        var bobPhone: Session
    }

    static func setUp(_ fixture: StoreFixture, notificationInfo: JSONObject = ["title": "Blocked"], push: PushSettings = settings) async throws -> Setup {
        let clock = ManualClock()
        let store = try await Store.open(pool: fixture.pool, clock: clock, push: push)
        let mac = try await fixture.session(user: "alice", device: "mac")
        let phone = try await fixture.session(user: "alice", device: "phone")
        let bobPhone = try await fixture.session(user: "bob", device: "phone")
        for (session, token) in [(mac, String(repeating: "11", count: 32)), (phone, phoneToken), (bobPhone, String(repeating: "22", count: 32))] {
            try await store.pushRegistrations.register(session, PushRegistrationRequest(apnsEnvironment: .production, apnsToken: token))
        }
        for session in [mac, bobPhone] {
            let subscription = try Subscription.parse(.object([
                "subscriptionID": "events", "subscriptionType": "query", "query": .object(["recordType": "Note"]),
                "notificationInfo": .object(notificationInfo),
            ]), schema: [:], limits: Limits())
            _ = try await store.subscriptions.modifySubscriptions(session, operations: [.save(subscription, mustExist: false)])
        }
        return Setup(store: store, clock: clock, mac: mac, phone: phone, bobPhone: bobPhone)
    }

    static func create(_ store: Store, _ session: Session, _ names: [String]) async throws {
        _ = try await store.records.modifyRecords(session, zoneName: "_defaultZone", operations: names.map { operation(.create, $0) },
                                                  atomic: true, limits: Limits())
    }

    struct OutboxRow: Sendable, Equatable {
        var device: String
        var kind: String
        var apnsID: String
        var notificationID: String
        var collapseKey: String?
        var dueAt: Int64
        var expiresAt: Int64
    }

    static func outbox(_ fixture: StoreFixture) async throws -> [OutboxRow] {
        try await fixture.run { connection in
            try connection.query("""
                SELECT r.device_token_id, o.push_type, o.apns_id::text, o.notification_id::text, o.collapse_key, o.due_at, o.expires_at
                FROM push_outbox o JOIN push_registrations r ON r.id = o.registration_id ORDER BY o.id
                """) { row in
                OutboxRow(device: try row.string(0), kind: try row.string(1), apnsID: try row.string(2), notificationID: try row.string(3),
                          collapseKey: try row.optionalString(4), dueAt: try row.milliseconds(5), expiresAt: try row.milliseconds(6))
            }
        }
    }

    struct Failure: Error {}

    @Test func aNotificationQueuesOnePushPerOtherRegisteredDeviceOfItsUserInItsTransaction() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Self.setUp(fixture)
            let now = setup.clock.nowMilliseconds()
            try await Self.create(setup.store, setup.mac, ["n1"])
            let rows = try await Self.outbox(fixture)
            // Only alice's phone: not the mac that wrote, not bob's phone.
            #expect(rows.map(\.device) == [setup.phone.tokenID])
            let row = try #require(rows.first)
            #expect(row.kind == "alert")
            #expect(row.collapseKey == nil)
            #expect(row.dueAt == now)
            #expect(row.expiresAt == now + 7 * 86_400_000)
            #expect(row.apnsID == PushIdentifier.apnsID(notificationID: row.notificationID, deviceTokenID: setup.phone.tokenID))
            let notified = try await fixture.run { try $0.query("SELECT notification_id::text FROM notifications") { try $0.string(0) } }
            #expect(notified == [row.notificationID])

            // The same write failing after its statements ran leaves neither notification nor push.
            let request = RecordWriteRequest(session: setup.mac, zoneName: "_defaultZone", operations: [operation(.create, "n2")],
                                             atomic: true, limits: Limits())
            await #expect(throws: Failure.self) {
                _ = try await LockedWrite(alongside: { _ in throw Failure() }).write(request, in: setup.store.records)
            }
            #expect(try await Self.outbox(fixture).count == 1)
            #expect(try await fixture.run { try $0.queryFirst("SELECT count(*) FROM notifications") { try $0.int(0) } } == 1)
        }
    }

    @Test func aLongPollParkedOnAnyInstanceHoldsThePushForTheGraceUntilItsMarkEnds() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Self.setUp(fixture)
            // Parked on another instance: this store's hub has no waiter, the database has the mark.
            try await setup.store.pushOutbox.longPollParked(setup.phone, waitSeconds: 30)
            #expect(!setup.store.hub.isParked(tokenID: setup.phone.tokenID, databaseID: setup.phone.databaseID))
            let now = setup.clock.nowMilliseconds()
            try await Self.create(setup.store, setup.mac, ["n1"])
            #expect(try await Self.outbox(fixture).map(\.dueAt) == [now + Int64(Limits().pushGraceMillis)])
            // A device without a registration here leaves no mark.
            try await setup.store.pushOutbox.longPollParked(setup.mac, waitSeconds: 30)
            _ = try await setup.store.pushRegistrations.unregister(setup.phone)
            try await setup.store.pushOutbox.longPollParked(setup.phone, waitSeconds: 30)
            #expect(try await fixture.run { try $0.queryFirst("SELECT count(*) FROM push_long_polls") { try $0.int(0) } } == 2)
        }
    }

    @Test func aLongPollMarkLastsTheWaitAndAMargin() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Self.setUp(fixture)
            try await setup.store.pushOutbox.longPollParked(setup.phone, waitSeconds: 30)
            setup.clock.advance(milliseconds: 30_000 + PushOutboxStore.longPollMarginMillis)
            let now = setup.clock.nowMilliseconds()
            try await Self.create(setup.store, setup.mac, ["n1"])
            #expect(try await Self.outbox(fixture).map(\.dueAt) == [now])
        }
    }

    @Test func backgroundPushesCarryTheZoneAndSilentSubscriptionsQueueNothing() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Self.setUp(fixture, notificationInfo: ["shouldSendContentAvailable": true])
            try await Self.create(setup.store, setup.mac, ["n1"])
            let rows = try await Self.outbox(fixture)
            #expect(rows.map(\.kind) == ["background"])
            #expect(rows.map(\.collapseKey) == ["_defaultZone"])
        }
        try await StoreFixture.with { fixture in
            let setup = try await Self.setUp(fixture, notificationInfo: ["desiredKeys": ["title"]])
            try await Self.create(setup.store, setup.mac, ["n1"])
            #expect(try await Self.outbox(fixture).isEmpty)
        }
    }

    @Test func withPushOffOrWithoutATopicNothingIsQueued() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Self.setUp(fixture)
            let off = try await Store.open(pool: fixture.pool, clock: setup.clock)
            try await Self.create(off, setup.mac, ["n1"])
            #expect(try await Self.outbox(fixture).isEmpty)
            // Push on, but the container lost its topic: nothing is queued for it either.
            let untopical = try await Store.open(pool: fixture.pool, clock: setup.clock, push: PushSettings(mode: .direct, topics: ["iCloud.other": "com.other"]))
            try await Self.create(untopical, setup.mac, ["n1b"])
            #expect(try await Self.outbox(fixture).isEmpty)
            try await Self.create(setup.store, setup.mac, ["n2"])
            #expect(try await Self.outbox(fixture).count == 1)
        }
    }

    @Test func concurrentClaimersNeverGetTheSameRow() async throws {
        try await StoreFixture.with(poolSize: 12) { fixture in
            let setup = try await Self.setUp(fixture)
            try await Self.create(setup.store, setup.mac, (0..<60).map { "n\($0)" })
            let now = setup.clock.nowMilliseconds()
            // Four instances over one database, each claiming small batches until nothing is due.
            var stores: [Store] = []
            for _ in 0..<4 { stores.append(try await Store.open(pool: fixture.pool, clock: setup.clock, push: Self.settings)) }
            let claimed = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for store in stores {
                    group.addTask {
                        var mine: [Int64] = []
                        while true {
                            let batch = try await store.pushOutbox.claimDuePushes(limit: 3, now: now)
                            if batch.isEmpty { return mine }
                            mine += batch.map(\.outboxID)
                        }
                    }
                }
                return try await group.reduce(into: [[Int64]]()) { $0.append($1) }
            }
            let all = claimed.flatMap { $0 }
            #expect(all.count == 60)
            #expect(Set(all).count == 60, "a row was claimed twice")
            // Leased: nothing is due again until the lease runs out, then everything is.
            #expect(try await setup.store.pushOutbox.claimDuePushes(limit: 100, now: now + PushOutboxStore.leaseMillis - 1).isEmpty)
            let again = try await setup.store.pushOutbox.claimDuePushes(limit: 100, now: now + PushOutboxStore.leaseMillis)
            #expect(again.count == 60)
            #expect(Set(again.map(\.attempt)) == [2])
        }
    }

    @Test func aClaimCarriesWhatTheSenderNeeds() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Self.setUp(fixture)
            try await Self.create(setup.store, setup.mac, ["n1"])
            let push = try #require(try await setup.store.pushOutbox.claimDuePushes(limit: 10).first)
            #expect(push.attempt == 1)
            #expect(push.apnsToken == Self.phoneToken)
            #expect(push.apnsEnvironment == .production)
            #expect(push.topic == "com.test.App")
            #expect(push.deviceTokenID == setup.phone.tokenID)
            #expect(push.notification["notificationID"]?.stringValue == push.notificationID)
            #expect(push.notification["recordName"]?.stringValue == "n1")
            let sequence = try await setup.store.notifications.currentNotificationSequence(databaseID: setup.mac.databaseID)
            #expect(setup.store.notifications.sequence(cursor: push.cursor, databaseID: setup.mac.databaseID) == sequence)
            #expect(push.badge == false)
            #expect(try await setup.store.pushOutbox.earliestDueAt() != nil)
        }
    }

    @Test func aClaimCarriesTheSubscriptionsBadgeAndAnEmptyOutboxHasNoDueTime() async throws {
        try await StoreFixture.with { fixture in
            let setup = try await Self.setUp(fixture, notificationInfo: ["title": "Blocked", "shouldBadge": true])
            #expect(try await setup.store.pushOutbox.earliestDueAt() == nil)
            try await Self.create(setup.store, setup.mac, ["n1"])
            let push = try #require(try await setup.store.pushOutbox.claimDuePushes(limit: 10).first)
            #expect(push.badge)
        }
    }
}
