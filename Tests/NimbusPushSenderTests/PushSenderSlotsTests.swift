import Foundation
import NimbusCore
import NimbusPush
import NimbusPushSender
@testable import NimbusStore
import NimbusSupport
import NimbusTestSupport
import Testing

/// The send slots (`PushSchedule.maxSending`) apart from the claimed places (`maxInFlight`): pushes
/// are claimed ahead of their slot, at most `maxSending` are on their way at once, and `stop` hands
/// the claimed pushes still waiting for a slot back to the outbox.
@Suite struct PushSenderSlotsTests {
    /// Answers 200 after `delay`; counts the sends on their way at once.
    final class CountingTransport: PushTransport, @unchecked Sendable {
        // The lock guards the only mutable state.
        private let state = Lock<(requests: Int, running: Int, most: Int)>((0, 0, 0))
        let delayNanoseconds: UInt64
        init(delayNanoseconds: UInt64) { self.delayNanoseconds = delayNanoseconds }
        var requests: Int { state.withLock { $0.requests } }
        var most: Int { state.withLock { $0.most } }

        func send(_ request: APNsRequest) async throws -> APNsResponse {
            state.withLock { state in
                state.requests += 1
                state.running += 1
                state.most = max(state.most, state.running)
            }
            try? await Task.sleep(nanoseconds: delayNanoseconds)
            state.withLock { $0.running -= 1 }
            return APNsResponse(status: 200)
        }

        func shutdown() {}
    }

    static let container = "iCloud.test.App"

    /// alice's phone has a registration and a subscription; her mac writes `notes` Notes at once
    /// (one push each) with a sender on `schedule` running; `body` gets the sender and the fixture.
    static func with(_ transport: CountingTransport, schedule: PushSchedule, notes: Int,
                     _ body: @escaping @Sendable (PushSender, Task<Void, Never>, StoreFixture) async throws -> Void) async throws {
        try await StoreFixture.with { fixture in
            let store = try await Store.open(pool: fixture.pool, push: PushSettings(mode: .direct, topics: [container: "com.test.App"]))
            let mac = try await fixture.session(user: "alice", device: "mac")
            let phone = try await fixture.session(user: "alice", device: "phone")
            let token = String(repeating: "cd", count: 32)
            try await store.pushRegistrations.register(phone, PushRegistrationRequest(apnsEnvironment: .production, apnsToken: token))
            let subscription = try Subscription.parse(.object([
                "subscriptionID": "notes", "subscriptionType": "query", "query": .object(["recordType": "Note"]),
                "notificationInfo": .object(["title": "New note"]),
            ]), schema: [:], limits: Limits())
            _ = try await store.subscriptions.modifySubscriptions(phone, operations: [.save(subscription, mustExist: false)])
            let sender = PushSender(store: store, transport: transport, limits: Limits(), schedule: schedule)
            let running = Task { await sender.run() }
            let writes = (0..<notes).map { RecordOperation(kind: .create, recordName: "n\($0)", recordType: "Note", changeTag: nil, fields: []) }
            _ = try await store.records.modifyRecords(mac, zoneName: "_defaultZone", operations: writes.map { .success($0) }, atomic: true,
                                                      limits: Limits())
            try await body(sender, running, fixture)
        }
    }

    @Test func atMostMaxSendingAreOnTheirWayWhileMoreAreClaimed() async throws {
        let transport = CountingTransport(delayNanoseconds: 50_000_000)
        try await Self.with(transport, schedule: PushSchedule(maxSending: 4, maxInFlight: 40), notes: 40) { sender, running, fixture in
            let deadline = Date().addingTimeInterval(60)
            while transport.requests < 40, Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
            sender.stop()
            await running.value
            #expect(transport.requests == 40)
            // 40 claimed at once, 4 on their way at a time (without the slots: up to 40 at once).
            #expect(transport.most == 4)
            let left = try await fixture.run { try $0.queryFirst("SELECT count(*) FROM push_outbox") { try $0.int(0) } }
            #expect(left == 0)
        }
    }

    @Test func stopHandsTheClaimedPushesWaitingForASlotBackUnattempted() async throws {
        // 2 slots, answers after 300 ms: stop comes while most of the 40 claimed pushes wait for a slot.
        let transport = CountingTransport(delayNanoseconds: 300_000_000)
        try await Self.with(transport, schedule: PushSchedule(maxSending: 2, maxInFlight: 40), notes: 40) { sender, running, fixture in
            let deadline = Date().addingTimeInterval(60)
            while transport.requests < 1, Date() < deadline { try await Task.sleep(nanoseconds: 10_000_000) }
            sender.stop()
            await running.value
            let sent = transport.requests
            #expect(sent >= 1 && sent < 40)
            // The sent ones were recorded; the others are queued again, due, their attempt not counted.
            let rows = try await fixture.run { connection in
                try connection.query("SELECT state, attempts, due_at <= now() FROM push_outbox") {
                    (try $0.string(0), try $0.int(1), try $0.bool(2))
                }
            }
            let delivered = try await fixture.run {
                try $0.queryFirst("SELECT count(*) FROM push_log WHERE outcome = 'delivered'") { try $0.int(0) }
            }
            #expect(delivered == sent)
            #expect(rows.count == 40 - sent)
            #expect(rows.allSatisfy { $0.0 == "queued" && $0.1 == 0 && $0.2 })
        }
    }
}
