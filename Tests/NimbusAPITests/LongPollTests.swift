import Foundation
import NimbusCore
import Testing

/// Waiting `records/changes` and `zones/changes` (docs/api.md records/changes `wait`, Details →
/// Change feeds), in process: a write by another device answers a waiter at once with the record;
/// with nothing happening it answers at its wait, empty, with exactly the request's token (without
/// one: the zone's current token); writes elsewhere, or of types `desiredRecordTypes` filters out,
/// leave it waiting; deleting its zone answers it; waits outside 0–55 are BAD_REQUEST.
/// (Was scenario 40; the wire's chunked framing stays in scenario 43.)
@Suite struct LongPollTests {
    /// A bound for "at once" that tells a wake-up from a wait running out (the waits are 30 s),
    /// generous for a shared 2-core machine running hundreds of tests.
    static let atOnce = 10.0

    struct Devices {
        var mac: String
        var phone: String
    }

    private func setUp(_ fixture: APIFixture, zones: [String]) async throws -> Devices {
        let devices = Devices(mac: try await fixture.token(device: "mac"), phone: try await fixture.token(device: "phone"))
        let operations = zones.map { #"{"operationType":"create","zone":{"zoneID":{"zoneName":"\#($0)"}}}"# }.joined(separator: ",")
        let made = await fixture.database("zones/modify", token: devices.mac, #"{"operations":[\#(operations)]}"#)
        #expect(made.status == 200, "\(made)")
        return devices
    }

    /// One records/modify operation by `token`; its item must be saved.
    static func write(_ fixture: APIFixture, _ token: String, zone: String, _ name: String, operation: String = "create",
                      type: String = "Note") async {
        let answer = await fixture.database("records/modify", token: token, """
            {"zoneID":{"zoneName":"\(zone)"},"operations":[{"operationType":"\(operation)","record":{"recordName":"\(name)",\
            "recordType":"\(type)","fields":{"text":{"value":"\(name) text"}}}}]}
            """)
        #expect(answer.status == 200 && answer.itemCodes == ["ok"], "\(operation) \(name): \(answer)")
    }

    /// The zone's current token (a records/changes without one, not waiting).
    static func currentToken(_ fixture: APIFixture, _ token: String, zone: String) async -> String {
        await fixture.database("records/changes", token: token, #"{"zoneID":{"zoneName":"\#(zone)"}}"#).json["syncToken"]?.stringValue ?? ""
    }

    static func changes(_ zone: String, token: String?, wait: String, extra: String = "") -> String {
        let syncToken = token.map { #","syncToken":"\#($0)""# } ?? ""
        return #"{"zoneID":{"zoneName":"\#(zone)"}\#(syncToken),"wait":\#(wait)\#(extra)}"#
    }

    /// The names in an answer's records.
    static func names(_ answer: Answer) -> [String] {
        (answer.trimmedJSON["records"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue }
    }

    @Test func withNothingHappeningAWaitAnswersAtItsEndEmptyWithTheRequestsToken() async throws {
        try await APIFixture.with { fixture in
            let devices = try await setUp(fixture, zones: ["Events", "Quiet"])
            // Quiet holds only a tombstone: a request without a token finds nothing live.
            await Self.write(fixture, devices.mac, zone: "Quiet", "gone")
            await Self.write(fixture, devices.mac, zone: "Quiet", "gone", operation: "forceDelete")
            let quietToken = await Self.currentToken(fixture, devices.phone, zone: "Quiet")
            let list = await fixture.send("GET", "/database/1/\(fixture.container)/development/private/zones/list", token: devices.phone)
            let listed = list.items("zones").first { $0["zoneID"]?["zoneName"]?.stringValue == "Quiet" }
            #expect(listed?["syncToken"]?.stringValue == quietToken, "zones/list and records/changes agree on Quiet's token: \(list)")
            let eventsToken = await Self.currentToken(fixture, devices.phone, zone: "Events")
            let databaseToken = await fixture.database("zones/changes", token: devices.phone).json["syncToken"]?.stringValue ?? ""

            let started = Date()
            let withToken = fixture.startDatabase("records/changes", token: devices.phone, Self.changes("Events", token: eventsToken, wait: "2"))
            let withoutToken = fixture.startDatabase("records/changes", token: devices.phone, Self.changes("Quiet", token: nil, wait: "2"))
            let zones = fixture.startDatabase("zones/changes", token: devices.phone, #"{"syncToken":"\#(databaseToken)","wait":2}"#)
            #expect(await fixture.parked(3))
            #expect(withToken.streamedAt != nil && withToken.streamedAt.map { $0.timeIntervalSince(started) < Self.atOnce } == true,
                    "a waiting answer's head goes out when it parks")
            for (name, sink) in [("records/changes", withToken), ("without a token", withoutToken), ("zones/changes", zones)] {
                let answer = await sink.answer()
                let elapsed = Date().timeIntervalSince(started)
                #expect(answer.status == 200 && elapsed >= 1.9 && elapsed < 2 + Self.atOnce, "\(name): \(answer) after \(elapsed) s")
                #expect(answer.trimmedJSON["moreComing"]?.boolValue == false || name == "zones/changes", "\(name): \(answer)")
            }
            let answer = await withToken.answer(), quiet = await withoutToken.answer(), zonesAnswer = await zones.answer()
            #expect(Self.names(answer).isEmpty && answer.trimmedJSON["records"]?.arrayValue != nil, "\(answer)")
            #expect(answer.trimmedJSON["syncToken"]?.stringValue == eventsToken, "the empty answer carries exactly the request's token")
            #expect(Self.names(quiet).isEmpty && quiet.trimmedJSON["syncToken"]?.stringValue == quietToken,
                    "without a token: nothing, and the zone's current token: \(quiet)")
            #expect(zonesAnswer.trimmedJSON["zones"]?.arrayValue?.isEmpty == true, "\(zonesAnswer)")
            #expect(zonesAnswer.trimmedJSON["syncToken"]?.stringValue == databaseToken, "\(zonesAnswer)")
            #expect(await fixture.parked(0))
        }
    }

    @Test func aWriteByAnotherDeviceAnswersTheWaiterAtOnceWithTheRecord() async throws {
        try await APIFixture.with { fixture in
            let devices = try await setUp(fixture, zones: ["Events", "Quiet"])
            let token0 = await Self.currentToken(fixture, devices.phone, zone: "Events")
            let created = fixture.startDatabase("records/changes", token: devices.phone, Self.changes("Events", token: token0, wait: "30"))
            #expect(await fixture.parked(1))
            let sent = Date()
            await Self.write(fixture, devices.mac, zone: "Events", "r1")
            let woken = await created.answer()
            #expect(Date().timeIntervalSince(sent) < Self.atOnce, "answered at once")
            #expect(Self.names(woken) == ["r1"], "\(woken)")
            #expect(woken.trimmedJSON["records"]?.arrayValue?.first?["fields"]?["text"]?["value"]?.stringValue == "r1 text", "\(woken)")
            let token1 = woken.trimmedJSON["syncToken"]?.stringValue ?? ""
            #expect(!token1.isEmpty && token1 != token0, "the token advanced")
            let after = await fixture.database("records/changes", token: devices.phone, Self.changes("Events", token: token1, wait: "0"))
            #expect(Self.names(after).isEmpty, "the woken answer's token is past r1: \(after)")

            // A write in another zone leaves it parked; r1's delete wakes it with the tombstone.
            let deleted = fixture.startDatabase("records/changes", token: devices.phone, Self.changes("Events", token: token1, wait: "30"))
            #expect(await fixture.parked(1))
            await Self.write(fixture, devices.mac, zone: "Quiet", "elsewhere")
            try await Task.sleep(nanoseconds: 500_000_000)
            #expect(!deleted.isFinished, "a write in zone Quiet answered the waiter on Events: \(deleted.soFar)")
            await Self.write(fixture, devices.mac, zone: "Events", "r1", operation: "forceDelete")
            let tombstone = await deleted.answer()
            let record = tombstone.trimmedJSON["records"]?.arrayValue?.first
            #expect(Self.names(tombstone) == ["r1"] && record?["deleted"]?.boolValue == true, "the tombstone of r1: \(tombstone)")
        }
    }

    @Test func desiredRecordTypesKeepsAWaiterParkedThroughOtherTypes() async throws {
        try await APIFixture.with { fixture in
            let devices = try await setUp(fixture, zones: ["Events"])
            let token = await Self.currentToken(fixture, devices.phone, zone: "Events")
            let typed = fixture.startDatabase("records/changes", token: devices.phone,
                                              Self.changes("Events", token: token, wait: "30", extra: #","desiredRecordTypes":["Task"]"#))
            #expect(await fixture.parked(1))
            await Self.write(fixture, devices.mac, zone: "Events", "n1")
            try await Task.sleep(nanoseconds: 500_000_000)
            #expect(!typed.isFinished, "a Note answered a waiter for Task changes: \(typed.soFar)")
            await Self.write(fixture, devices.mac, zone: "Events", "t1", type: "Task")
            #expect(Self.names(await typed.answer()) == ["t1"])
        }
    }

    @Test func withoutATokenOnAnEmptyZoneAWriteAnswersWithTheRecord() async throws {
        try await APIFixture.with { fixture in
            let devices = try await setUp(fixture, zones: ["Fresh"])
            let waiter = fixture.startDatabase("records/changes", token: devices.phone, Self.changes("Fresh", token: nil, wait: "30"))
            #expect(await fixture.parked(1))
            await Self.write(fixture, devices.mac, zone: "Fresh", "f1")
            #expect(Self.names(await waiter.answer()) == ["f1"])
        }
    }

    @Test func deletingTheZoneAnswersItsWaiterAtOnce() async throws {
        try await APIFixture.with { fixture in
            let devices = try await setUp(fixture, zones: ["Doomed"])
            let token = await Self.currentToken(fixture, devices.phone, zone: "Doomed")
            let waiter = fixture.startDatabase("records/changes", token: devices.phone, Self.changes("Doomed", token: token, wait: "30"))
            #expect(await fixture.parked(1))
            let sent = Date()
            let deleted = await fixture.database("zones/modify", token: devices.mac,
                                                 #"{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"Doomed"}}}]}"#)
            #expect(deleted.status == 200, "\(deleted)")
            let answer = await waiter.answer()
            #expect(Date().timeIntervalSince(sent) < Self.atOnce)
            if answer.status == 200 {
                #expect(Self.names(answer).isEmpty && answer.trimmedJSON["syncToken"]?.stringValue == token, "\(answer)")
            } else {
                #expect(answer.status == 404 && answer.serverErrorCode == "ZONE_NOT_FOUND", "\(answer)")
            }
            let next = await fixture.database("records/changes", token: devices.phone, Self.changes("Doomed", token: token, wait: "20"))
            #expect(next.status == 404 && next.serverErrorCode == "ZONE_NOT_FOUND", "\(next)")
        }
    }

    @Test func waitsOutsideZeroToFiftyFiveAreBadRequestsAndFiftyFiveParks() async throws {
        try await APIFixture.with { fixture in
            let devices = try await setUp(fixture, zones: ["Events"])
            let token = await Self.currentToken(fixture, devices.phone, zone: "Events")
            for bad in ["56", "-1", #""5""#, "100000", "1.5"] {
                let refused = await fixture.database("records/changes", token: devices.phone, Self.changes("Events", token: token, wait: bad))
                #expect(refused.status == 400 && refused.serverErrorCode == "BAD_REQUEST", "wait \(bad): \(refused)")
            }
            let zones = await fixture.database("zones/changes", token: devices.phone, #"{"wait":56}"#)
            #expect(zones.status == 400 && zones.serverErrorCode == "BAD_REQUEST", "zones/changes wait 56: \(zones)")
            #expect(fixture.api.store.hub.count == 0, "a refused wait parks nothing")
            let waiter = fixture.startDatabase("records/changes", token: devices.phone, Self.changes("Events", token: token, wait: "55"))
            #expect(await fixture.parked(1))
            await Self.write(fixture, devices.mac, zone: "Events", "r55")
            #expect(Self.names(await waiter.answer()) == ["r55"])
        }
    }
}
