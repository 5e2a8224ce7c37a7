import Foundation
import NimbusCore
import NimbusPush
import NimbusPushSender
@testable import NimbusStore
import NimbusSupport
import NimbusTestSupport
import Testing

/// The sender's loop in process, against PostgreSQL, with a transport that answers from a script
/// (the end-to-end tests against the APNs stand-in are the 49-push-* scenarios).
@Suite struct PushSenderTests {
    /// Records every request; answers from `script` in order, then 200.
    final class ScriptedTransport: PushTransport, @unchecked Sendable {
        // The lock guards the only mutable state.
        private let state: Lock<(requests: [APNsRequest], script: [Result<Int, APNsClientError>])>
        init(_ script: [Result<Int, APNsClientError>] = []) { state = Lock(([], script)) }
        var requests: [APNsRequest] { state.withLock { $0.requests } }

        func send(_ request: APNsRequest) async throws -> APNsResponse {
            let next = state.withLock { state -> Result<Int, APNsClientError> in
                state.requests.append(request)
                return state.script.isEmpty ? .success(200) : state.script.removeFirst()
            }
            return APNsResponse(status: try next.get())
        }

        func shutdown() {}
    }

    static let container = "iCloud.test.App"
    static let phoneToken = String(repeating: "ab", count: 32)

    /// alice's mac writes a Note her phone's subscription fires on, with `transport` sending.
    static func run(_ transport: ScriptedTransport, until done: @escaping @Sendable () -> Bool) async throws {
        try await StoreFixture.with { fixture in
            let store = try await Store.open(pool: fixture.pool, push: PushSettings(mode: .direct, topics: [container: "com.test.App"]))
            let mac = try await fixture.session(user: "alice", device: "mac")
            let phone = try await fixture.session(user: "alice", device: "phone")
            try await store.pushRegistrations.register(phone, PushRegistrationRequest(apnsEnvironment: .production, apnsToken: phoneToken))
            let subscription = try Subscription.parse(.object([
                "subscriptionID": "notes", "subscriptionType": "query", "query": .object(["recordType": "Note"]),
                "notificationInfo": .object(["title": "New note", "shouldBadge": true]),
            ]), schema: [:], limits: Limits())
            _ = try await store.subscriptions.modifySubscriptions(phone, operations: [.save(subscription, mustExist: false)])
            let sender = PushSender(store: store, transport: transport, limits: Limits())
            let running = Task { await sender.run() }
            let note = RecordOperation(kind: .create, recordName: "n1", recordType: "Note", changeTag: nil, fields: [])
            _ = try await store.records.modifyRecords(mac, zoneName: "_defaultZone", operations: [.success(note)], atomic: true, limits: Limits())
            let deadline = Date().addingTimeInterval(30)
            while !done(), Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
            sender.stop()
            await running.value
        }
    }

    @Test func aWrittenNotificationIsSentAtOnceAsItsAlert() async throws {
        let transport = ScriptedTransport()
        // `run` gives the sender 30 s from the write (the fixture's set-up before it can take longer
        // than that under a parallel suite, so the bound is not measured from here).
        try await Self.run(transport) { !transport.requests.isEmpty }
        let request = try #require(transport.requests.first)
        #expect(transport.requests.count == 1)
        #expect(request.deviceToken == Self.phoneToken && request.topic == "com.test.App")
        #expect(request.pushType == .alert && request.priority == .immediate && request.environment == .production)
        let aps = try JSONValue.parse(request.payload).objectValue?["aps"]?.objectValue
        #expect(aps?["alert"] == .object(["title": .string("New note")]) && aps?["badge"] == .integer(1))
    }

    @Test func noAnswerAndA500AreRetriedWithTheSameAPNsID() async throws {
        let lost = APNsClientError.connection(APNsConnectionFailure(kind: .connectionLost, code: 56, detail: "reset"))
        let transport = ScriptedTransport([.failure(lost), .success(500)])
        try await Self.run(transport) { transport.requests.count >= 3 }
        let requests = transport.requests
        #expect(requests.count == 3)
        #expect(Set(requests.map(\.apnsID)).count == 1)
    }

    /// Records every request when it starts, answers 200 after `delay`.
    final class SlowTransport: PushTransport, @unchecked Sendable {
        // The lock guards the only mutable state.
        private let state = Lock<[APNsRequest]>([])
        let delayNanoseconds: UInt64
        init(delayNanoseconds: UInt64) { self.delayNanoseconds = delayNanoseconds }
        var requests: [APNsRequest] { state.withLock { $0 } }

        func send(_ request: APNsRequest) async throws -> APNsResponse {
            state.withLock { $0.append(request) }
            try? await Task.sleep(nanoseconds: delayNanoseconds)
            return APNsResponse(status: 200)
        }

        func shutdown() {}
    }

    @Test func manyPushesGoInBatchesAndStopReturnsOnceEveryOutcomeIsRecorded() async throws {
        // Answers take 300 ms: `stop` comes while the last sends are still waiting for theirs.
        let transport = SlowTransport(delayNanoseconds: 300_000_000)
        try await StoreFixture.with { fixture in
            let store = try await Store.open(pool: fixture.pool, push: PushSettings(mode: .direct, topics: [Self.container: "com.test.App"]))
            let mac = try await fixture.session(user: "alice", device: "mac")
            let phone = try await fixture.session(user: "alice", device: "phone")
            try await store.pushRegistrations.register(phone, PushRegistrationRequest(apnsEnvironment: .production, apnsToken: Self.phoneToken))
            let subscription = try Subscription.parse(.object([
                "subscriptionID": "notes", "subscriptionType": "query", "query": .object(["recordType": "Note"]),
                "notificationInfo": .object(["title": "New note"]),
            ]), schema: [:], limits: Limits())
            _ = try await store.subscriptions.modifySubscriptions(phone, operations: [.save(subscription, mustExist: false)])
            // 10 slots: the 200 pushes take many claims and many recorded batches.
            let sender = PushSender(store: store, transport: transport, limits: Limits(), schedule: PushSchedule(maxInFlight: 10))
            let running = Task { await sender.run() }
            let notes = (0..<200).map { RecordOperation(kind: .create, recordName: "n\($0)", recordType: "Note", changeTag: nil, fields: []) }
            _ = try await store.records.modifyRecords(mac, zoneName: "_defaultZone", operations: notes.map { .success($0) }, atomic: true,
                                                      limits: Limits())
            let deadline = Date().addingTimeInterval(60)
            while transport.requests.count < 200, Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
            sender.stop()
            await running.value
            #expect(transport.requests.count == 200)
            #expect(Set(transport.requests.map(\.apnsID)).count == 200)
            // Stopped before the last answers came: their outcomes were recorded before `run` returned.
            let left = try await fixture.run { try $0.queryFirst("SELECT count(*) FROM push_outbox") { try $0.int(0) } }
            let delivered = try await fixture.run {
                try $0.queryFirst("SELECT count(*) FROM push_log WHERE outcome = 'delivered'") { try $0.int(0) }
            }
            #expect(left == 0)
            #expect(delivered == 200)
        }
    }
}
