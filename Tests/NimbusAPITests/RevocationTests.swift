import Foundation
import NimbusAPI
import NimbusCore
import NimbusPostgres
import NimbusStore
import NimbusSupport
import NimbusTestSupport
import Testing

/// A device revoked while its long-polls are parked (docs/scaling.md "How wake-ups travel"): every
/// instance answers them at once, empty, nothing written after the revocation reaches them, and
/// the device's next request is 401.
@Suite struct RevocationTests {
    /// A second instance over the fixture's database: its own pool, hub and LISTEN connection.
    struct Instance: Sendable {
        let api: APIFixture
        let listener: PGListener
        let pool: PGPool

        static func with<T: Sendable>(_ fixture: APIFixture, _ body: (Instance) async throws -> T) async throws -> T {
            let pool = PGPool(configuration: PGPool.Configuration(url: fixture.database.url))
            let store = try await Store.open(pool: pool)
            let listener = store.startListening(url: fixture.database.url)
            defer {
                listener.stop()
                pool.close()
            }
            let deadline = Date().addingTimeInterval(5)
            while !listener.isConnected && Date() < deadline { try await Task.sleep(nanoseconds: 10_000_000) }
            #expect(listener.isConnected, "the second instance's LISTEN connection is up")
            let value = try await body(Instance(api: APIFixture(database: fixture.database, api: API(store: store, limits: Limits())),
                                                listener: listener, pool: pool))
            await store.flushAnnouncements()
            return value
        }
    }

    /// Waits until `api`'s hub holds `count` parked requests.
    private func parked(_ count: Int, on api: APIFixture) async throws {
        let deadline = Date().addingTimeInterval(5)
        while api.api.store.hub.count != count && Date() < deadline { try await Task.sleep(nanoseconds: 5_000_000) }
        #expect(api.api.store.hub.count == count, "\(count) parked requests")
    }

    private struct Setup {
        var mac: String
        var phone: IssuedToken
    }

    /// alice's mac and phone, zone Shared, and a subscription that fires on every Event.
    private func setUp(_ fixture: APIFixture) async throws -> Setup {
        let mac = try await fixture.token(device: "mac")
        let phone = try await fixture.database.store.accounts.issueToken(user: "alice", device: "phone")
        _ = await fixture.database(
            "zones/modify", token: mac, #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Shared"}}}]}"#)
        let subscription = await fixture.database("subscriptions/modify", token: mac, """
            {"operations":[{"operationType":"create","subscription":{"subscriptionID":"events","subscriptionType":"query",
             "query":{"recordType":"Event"},"firesOn":["create"],"notificationInfo":{"title":"Event"}}}]}
            """)
        #expect(subscription.status == 200, "\(subscription)")
        return Setup(mac: mac, phone: phone)
    }

    /// The phone's three kinds of long-poll, started on `api` with nothing newer to answer.
    private func startWaiters(_ setup: Setup, on api: APIFixture) async throws -> [(String, Task<Answer, Never>)] {
        let phone = setup.phone.secret
        let records = await api.database("records/changes", token: phone, #"{"zoneID":{"zoneName":"Shared"}}"#)
        let zones = await api.database("zones/changes", token: phone)
        let channel = await api.database("tokens/create", token: phone)
        let recordsToken = records.json["syncToken"]?.stringValue ?? ""
        let zonesToken = zones.json["syncToken"]?.stringValue ?? ""
        let url = channel.json["webcourierURL"]?.stringValue ?? ""
        let path = String(url[(url.range(of: "/webcourier/")?.lowerBound ?? url.endIndex)...])
        let cursor = channel.json["cursor"]?.stringValue ?? ""
        return [
            ("records/changes", Task { await api.database("records/changes", token: phone,
                                                          #"{"zoneID":{"zoneName":"Shared"},"syncToken":"\#(recordsToken)","wait":30}"#) }),
            ("zones/changes", Task { await api.database("zones/changes", token: phone, #"{"syncToken":"\#(zonesToken)","wait":30}"#) }),
            ("webcourier", Task { await api.send("GET", "\(path)?since=\(cursor)&wait=30", token: phone) }),
        ]
    }

    /// A record written by the mac (it fires the subscription, so a notification too).
    private func write(_ name: String, _ setup: Setup, on api: APIFixture) async {
        let answer = await api.database("records/modify", token: setup.mac, """
            {"zoneID":{"zoneName":"Shared"},"operations":[{"operationType":"create","record":{"recordName":"\(name)","recordType":"Event","fields":{}}}]}
            """)
        #expect(answer.status == 200 && answer.items("records").first?["serverErrorCode"] == nil, "\(answer)")
    }

    /// Each waiter answered within `seconds` of `since`, with nothing in it. The waits are 30 s, so
    /// 10 s tells "answered by the revocation" from "answered when its wait ran out" even with 900
    /// tests running in parallel on 2 cores (3 s was once missed at 4.2 s there).
    private func expectAnsweredEmpty(_ waiters: [(String, Task<Answer, Never>)], since start: Date, within seconds: Double) async {
        for (name, waiter) in waiters {
            let answer = await waiter.value
            let elapsed = Date().timeIntervalSince(start)
            #expect(answer.status == 200, "\(name): \(answer)")
            #expect(answer.items("records").isEmpty && answer.items("zones").isEmpty && answer.items("notifications").isEmpty,
                    "\(name) delivered what was written after the revocation: \(answer)")
            #expect(elapsed < seconds, "\(name) answered \(elapsed) s after the revocation")
        }
    }

    @Test func revokingThroughAnotherInstanceAnswersParkedWaitersAtOnce() async throws {
        try await APIFixture.with { fixture in
            let setup = try await setUp(fixture)
            try await Instance.with(fixture) { instance in
                let waiters = try await startWaiters(setup, on: instance.api)
                try await parked(3, on: instance.api)
                let revokedAt = Date()
                let revoke = await fixture.send("POST", "/devices/revoke", token: setup.mac, body: #"{"tokenID":"\#(setup.phone.tokenID)"}"#)
                #expect(revoke.status == 200, "\(revoke)")
                // Nothing else happens: only the revocation's notice can answer them before 30 s.
                await expectAnsweredEmpty(waiters, since: revokedAt, within: 10)
                try await parked(0, on: instance.api)
                let next = await instance.api.database("zones/changes", token: setup.phone.secret)
                #expect(next.status == 401 && next.serverErrorCode == "AUTHENTICATION_FAILED", "\(next)")
            }
        }
    }

    @Test func revokingFromTheCommandLineAnswersWaitersOnEveryInstance() async throws {
        try await APIFixture.with { fixture in
            let setup = try await setUp(fixture)
            try await Instance.with(fixture) { first in
                try await Instance.with(fixture) { second in
                    let waiters = try await startWaiters(setup, on: first.api) + startWaiters(setup, on: second.api)
                    try await parked(3, on: first.api)
                    try await parked(3, on: second.api)
                    let revokedAt = Date()
                    // What `nimbus token revoke` and the console's revoke run; the fixture's own
                    // store stands for the CLI: no waiters, no LISTEN.
                    try await fixture.database.store.accounts.revokeToken(tokenID: setup.phone.tokenID)
                    await expectAnsweredEmpty(waiters, since: revokedAt, within: 10)
                }
            }
        }
    }

    @Test func aWaiterWhoseRevocationNoticeNeverCameDeliversNothing() async throws {
        try await APIFixture.with { fixture in
            let setup = try await setUp(fixture)
            let waiters = try await startWaiters(setup, on: fixture)
            try await parked(3, on: fixture)
            // Revoked behind the server's back: no notice, only the check before delivery stands.
            _ = try await fixture.database.pool.withConnection { connection in
                try connection.run("UPDATE device_tokens SET revoked_at = now() WHERE token_id = \(setup.phone.tokenID)")
            }
            let revokedAt = Date()
            await write("after-revocation", setup, on: fixture)
            await expectAnsweredEmpty(waiters, since: revokedAt, within: 10)
        }
    }

    @Test func afterAListenReconnectMissedRevocationsAreLookedUp() async throws {
        try await APIFixture.with { fixture in
            let setup = try await setUp(fixture)
            let waiters = try await startWaiters(setup, on: fixture)
            try await parked(3, on: fixture)
            // Revoked while this instance's LISTEN connection was down: the notice is lost.
            _ = try await fixture.database.pool.withConnection { connection in
                try connection.run("UPDATE device_tokens SET revoked_at = now() WHERE token_id = \(setup.phone.tokenID)")
            }
            let revokedAt = Date()
            // What the listener's reconnect runs (`Store.startListening`).
            try await fixture.database.store.answerMissedRevocations()
            await expectAnsweredEmpty(waiters, since: revokedAt, within: 10)
        }
    }

    @Test func aRevokedTokenParksNoMoreOnAnInstanceThatHeardOfIt() async throws {
        try await APIFixture.with { fixture in
            let setup = try await setUp(fixture)
            // The notice came first; the request had authenticated before (no revocation in the database).
            fixture.api.store.hub.revoke(tokenID: setup.phone.tokenID)
            let answer = await fixture.database("zones/changes", token: setup.phone.secret, #"{"wait":30}"#)
            let zones = answer.items("zones")
            #expect(!zones.isEmpty, "zone Shared is new to a request without a token: answered at once")
            let token = answer.json["syncToken"]?.stringValue ?? ""
            let waiting = await fixture.database("zones/changes", token: setup.phone.secret, #"{"syncToken":"\#(token)","wait":30}"#)
            #expect(waiting.status == 401 && waiting.serverErrorCode == "AUTHENTICATION_FAILED", "\(waiting)")
        }
    }
}
