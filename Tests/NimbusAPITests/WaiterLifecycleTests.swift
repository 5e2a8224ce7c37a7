import Foundation
import NimbusAPI
import NimbusCore
import NimbusStore
import Testing

/// A waiting request's life beside its answer, in process through the writer's sink: heartbeat
/// spaces while it waits (and one at once when the client half-closes), its waiter freed when the
/// client goes away, caps per device and in all, shutdown answering every waiter, one write
/// waking exactly the waiters it concerns. (Were scenarios 43 and 44; the wire's one-byte chunks,
/// real disconnects, HTTP/1.0 and a thousand sockets stay there.)
@Suite struct WaiterLifecycleTests {
    private static func fastHeartbeat() -> Limits {
        var limits = Limits()
        limits.heartbeatSeconds = 1
        return limits
    }

    /// The phone's three kinds of wait (records/changes, zones/changes, a notification poll) of
    /// `wait` seconds, with nothing newer to answer.
    private func startThreeWaits(_ fixture: APIFixture, phone: String, wait: Int) async -> [(String, CapturingSink)] {
        let recordsToken = await LongPollTests.currentToken(fixture, phone, zone: "_defaultZone")
        let zonesToken = await fixture.database("zones/changes", token: phone).json["syncToken"]?.stringValue ?? ""
        let channel = await fixture.database("tokens/create", token: phone)
        let url = APIFixture.path(of: channel.json["webcourierURL"]?.stringValue ?? "")
        let cursor = channel.json["cursor"]?.stringValue ?? ""
        return [
            ("records/changes", fixture.startDatabase("records/changes", token: phone,
                                                      LongPollTests.changes("_defaultZone", token: recordsToken, wait: "\(wait)"))),
            ("zones/changes", fixture.startDatabase("zones/changes", token: phone, #"{"syncToken":"\#(zonesToken)","wait":\#(wait)}"#)),
            ("webcourier", fixture.start("GET", "\(url)?since=\(cursor)&wait=\(wait)", token: phone)),
        ]
    }

    @Test func aWaitingAnswerSendsASpaceEveryHeartbeatAndItsWaiterGoesWithTheClient() async throws {
        try await APIFixture.with(limits: Self.fastHeartbeat()) { fixture in
            let limits = await fixture.send("GET", "/limits")
            #expect(limits.json["heartbeatSeconds"]?.int64Value == 1, "\(limits)")
            let phone = try await fixture.token(device: "phone")
            let started = Date()
            let waits = await startThreeWaits(fixture, phone: phone, wait: 30)
            #expect(await fixture.parked(3))
            try await Task.sleep(nanoseconds: 3_200_000_000)
            for (name, sink) in waits {
                #expect(sink.soFar.status == 200 && !sink.isFinished, "\(name): \(sink.soFar)")
                #expect(sink.streamedAt.map { $0.timeIntervalSince(started) < LongPollTests.atOnce } == true, "\(name): the head went out at once")
                let chunks = sink.chunks
                #expect(chunks.count >= 2 && chunks.allSatisfy { $0.bytes == [0x20] }, "\(name): one-space chunks: \(chunks.map(\.bytes))")
                // A second apart (not a burst), whatever the load: at least half of it.
                let gaps = zip(chunks.dropFirst(), chunks).map { $0.at.timeIntervalSince($1.at) }
                #expect(gaps.allSatisfy { $0 >= 0.5 }, "\(name): heartbeats \(gaps) s apart at a 1 s heartbeat")
            }
            for (_, sink) in waits { sink.clientGoesAway() }
            #expect(await fixture.parked(0, within: 2), "clients that went away left \(fixture.api.store.hub.count) waiters")
        }
    }

    @Test func aClientThatHalfClosesGetsASpaceAtOnce() async throws {
        try await APIFixture.with { fixture in
            let phone = try await fixture.token(device: "phone")
            let waits = await startThreeWaits(fixture, phone: phone, wait: 30)
            #expect(await fixture.parked(3))
            #expect(await eventually(within: 5) { waits.allSatisfy { $0.1.streamedAt != nil } })
            for (name, sink) in waits {
                #expect(sink.chunks.isEmpty, "\(name): no heartbeat yet at the default 20 s")
                sink.clientClosesInput()
                #expect(await eventually(within: 5) { sink.chunks.map(\.bytes) == [[0x20]] }, "\(name): the probe: \(sink.chunks.map(\.bytes))")
                #expect(!sink.isFinished, "\(name): a half-closed client still gets its answer")
            }
            let mac = try await fixture.token(device: "mac")
            await LongPollTests.write(fixture, mac, zone: "_defaultZone", "after-probe")
            #expect(LongPollTests.names(await waits[0].1.answer()) == ["after-probe"])
            for (_, sink) in waits.dropFirst() { sink.clientGoesAway() }
            #expect(await fixture.parked(0, within: 2))
        }
    }

    @Test func anAnswerAfterHeartbeatsIsTheSpacesThenTheJSON() async throws {
        try await APIFixture.with(limits: Self.fastHeartbeat()) { fixture in
            let phone = try await fixture.token(device: "phone"), mac = try await fixture.token(device: "mac")
            let token = await LongPollTests.currentToken(fixture, phone, zone: "_defaultZone")
            let empty = fixture.startDatabase("records/changes", token: phone, LongPollTests.changes("_defaultZone", token: token, wait: "3"))
            let woken = fixture.startDatabase("records/changes", token: phone, LongPollTests.changes("_defaultZone", token: token, wait: "30"))
            let ended = await empty.answer()
            let spaces = ended.body.prefix { $0 == 0x20 }.count
            #expect(spaces >= 2, "\(spaces) heartbeat spaces in a wait of 3 s at 1 s")
            #expect(ended.trimmedJSON["syncToken"]?.stringValue == token && LongPollTests.names(ended).isEmpty, "\(ended)")
            await LongPollTests.write(fixture, mac, zone: "_defaultZone", "after-beats")
            let answer = await woken.answer()
            #expect(answer.body.first == 0x20 && LongPollTests.names(answer) == ["after-beats"], "\(answer)")
        }
    }

    @Test func oneWriteAnswersExactlyTheWaitersOfItsZone() async throws {
        try await APIFixture.with { fixture in
            let mac = try await fixture.token(device: "mac")
            let zones = (1...12).map { "Z\($0)" }
            let operations = zones.map { #"{"operationType":"create","zone":{"zoneID":{"zoneName":"\#($0)"}}}"# }.joined(separator: ",")
            #expect(await fixture.database("zones/modify", token: mac, #"{"operations":[\#(operations)]}"#).status == 200)
            // Each zone waited on by its own device (8 waits per device at most).
            var waiters: [(String, CapturingSink)] = []
            for zone in zones {
                let device = try await fixture.token(device: "device-\(zone)")
                let token = await LongPollTests.currentToken(fixture, device, zone: zone)
                waiters.append((zone, fixture.startDatabase("records/changes", token: device, LongPollTests.changes(zone, token: token, wait: "30"))))
            }
            #expect(await fixture.parked(zones.count))
            await LongPollTests.write(fixture, mac, zone: "Z1", "w-Z1")
            #expect(LongPollTests.names(await waiters[0].1.answer()) == ["w-Z1"])
            try await Task.sleep(nanoseconds: 300_000_000)
            #expect(fixture.api.store.hub.count == zones.count - 1, "one write to Z1 answered \(zones.count - fixture.api.store.hub.count) waiters")
            #expect(waiters.dropFirst().allSatisfy { !$0.1.isFinished })
            for (zone, _) in waiters.dropFirst() { await LongPollTests.write(fixture, mac, zone: zone, "w-\(zone)") }
            for (zone, sink) in waiters { #expect(LongPollTests.names(await sink.answer()) == ["w-\(zone)"], "\(zone)") }
            #expect(await fixture.parked(0))
        }
    }

    @Test func theNinthWaitOfADeviceAndTheWaitOverTheTotalAreThrottled() async throws {
        try await APIFixture.with { fixture in
            // An instance with the default 8 per device and a total of 12 (`--max-waiters 12`).
            let store = try await Store.open(pool: fixture.database.pool, hubCapacity: ChangeHub.Capacity(maxPerDevice: 8, maxTotal: 12))
            let instance = APIFixture(database: fixture.database, api: API(store: store, limits: Limits()))
            let mac = try await fixture.token(device: "mac")
            let two = try await fixture.token(device: "two"), three = try await fixture.token(device: "three")
            let four = try await fixture.token(device: "four")
            func wait(_ device: String) async -> CapturingSink {
                let token = await LongPollTests.currentToken(instance, device, zone: "_defaultZone")
                return instance.startDatabase("records/changes", token: device, LongPollTests.changes("_defaultZone", token: token, wait: "30"))
            }
            var twos: [CapturingSink] = []
            for _ in 1...8 { twos.append(await wait(two)) }
            #expect(await instance.parked(8))
            let ninth = await wait(two)
            let refused = await ninth.answer()
            #expect(refused.status == 429 && refused.serverErrorCode == "THROTTLED", "\(refused)")
            let retryAfter = refused.json["retryAfter"]?.int64Value ?? 0
            #expect(retryAfter >= 1 && refused.header("Retry-After") == "\(retryAfter)", "\(refused) \(refused.headers)")
            let notWaiting = await instance.database("records/changes", token: two, #"{"zoneID":{"zoneName":"_defaultZone"},"wait":0}"#)
            #expect(notWaiting.status == 200, "a request that does not wait is not capped: \(notWaiting)")
            var threes: [CapturingSink] = []
            for _ in 1...4 { threes.append(await wait(three)) }
            #expect(await instance.parked(12))
            let overTotal = await wait(four).answer()
            #expect(overTotal.status == 429 && overTotal.serverErrorCode == "THROTTLED" && overTotal.header("Retry-After") != nil, "\(overTotal)")
            #expect(fixture.api.store.hub.count == 0, "another instance's waiters do not show here")
            await LongPollTests.write(instance, mac, zone: "_defaultZone", "cap")
            for sink in twos + threes { #expect(LongPollTests.names(await sink.answer()) == ["cap"]) }
            #expect(await instance.parked(0))
            let again = await wait(two)
            #expect(await instance.parked(1), "answered waiters free their places")
            again.clientGoesAway()
            #expect(await instance.parked(0))
        }
    }

    @Test func shutdownAnswersEveryWaiterEmptyWithItsTokenOrCursor() async throws {
        try await APIFixture.with { fixture in
            let phone = try await fixture.token(device: "phone")
            let recordsToken = await LongPollTests.currentToken(fixture, phone, zone: "_defaultZone")
            let zonesToken = await fixture.database("zones/changes", token: phone).json["syncToken"]?.stringValue ?? ""
            let channel = await fixture.database("tokens/create", token: phone)
            let cursor = channel.json["cursor"]?.stringValue ?? ""
            let waits = await startThreeWaits(fixture, phone: phone, wait: 50)
            #expect(await fixture.parked(3))
            let closed = Date()
            fixture.api.store.hub.close()
            for (name, sink) in waits {
                let answer = await sink.answer()
                #expect(answer.status == 200 && Date().timeIntervalSince(closed) < LongPollTests.atOnce, "\(name): \(answer)")
                let json = answer.trimmedJSON
                switch name {
                case "records/changes": #expect(LongPollTests.names(answer).isEmpty && json["syncToken"]?.stringValue == recordsToken, "\(answer)")
                case "zones/changes": #expect(json["zones"]?.arrayValue?.isEmpty == true && json["syncToken"]?.stringValue == zonesToken, "\(answer)")
                default: #expect(json["notifications"]?.arrayValue?.isEmpty == true && json["cursor"]?.stringValue == cursor, "\(answer)")
                }
            }
            // Once closed, a wait is answered at once, the same way.
            let late = await fixture.database("records/changes", token: phone, LongPollTests.changes("_defaultZone", token: recordsToken, wait: "50"))
            #expect(late.status == 200 && late.trimmedJSON["syncToken"]?.stringValue == recordsToken, "\(late)")
        }
    }

    @Test func aRevokedDevicesNextNotificationPollIsRefused() async throws {
        try await APIFixture.with { fixture in
            _ = try await fixture.token(device: "mac")
            let phone = try await fixture.database.store.accounts.issueToken(user: "alice", device: "phone")
            let channel = await fixture.database("tokens/create", token: phone.secret)
            let url = APIFixture.path(of: channel.json["webcourierURL"]?.stringValue ?? "")
            try await fixture.database.store.accounts.revokeToken(tokenID: phone.tokenID)
            let poll = await fixture.send("GET", "\(url)?wait=30", token: phone.secret)
            #expect(poll.status == 401 && poll.serverErrorCode == "AUTHENTICATION_FAILED", "\(poll)")
        }
    }
}
