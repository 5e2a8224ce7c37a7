import Foundation
import NimbusCore
import Testing

/// What each kind of subscription fires on, and who may read a channel (was scenario 42; the
/// world is `NotificationTests.World`: the AppLocker schema in production).
@Suite struct SubscriptionKindsTests {
    typealias World = NotificationTests.World

    static func command(_ name: String, _ action: String) -> String {
        #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"RemoteCommand","fields":{"action":{"value":"\#(action)"},"sourceDevice":{"value":"mac"}}}}"#
    }

    static func list(_ operation: String, _ name: String, _ device: String) -> String {
        #"{"operationType":"\#(operation)","record":{"recordName":"\#(name)","recordType":"LockedAppList","fields":{"deviceName":{"value":"\#(device)"}}}}"#
    }

    static func forceDelete(_ name: String) -> String { #"{"operationType":"forceDelete","record":{"recordName":"\#(name)"}}"# }

    @Test func firesOnceFiresForTheFirstMatchAndIsGone() async throws {
        try await World.with { world in
            let (channel, start) = await world.channel(world.phone)
            await world.subscribe(world.phone, #"{"subscriptionID":"sub-blocked","subscriptionType":"query","query":{"recordType":"BlockedAppEvent"},"firesOn":["create"]}"#,
                                  #"{"subscriptionID":"cmd-once","subscriptionType":"query","query":{"recordType":"RemoteCommand","filterBy":[{"fieldName":"action","comparator":"EQUALS","fieldValue":{"value":"unlockAll"}}]},"firesOn":["create"],"firesOnce":true,"notificationInfo":{"alertBody":"Unlock requested"}}"#)
            await world.modify(world.mac, "_defaultZone", Self.command("once-lock", "lockAll"), Self.command("once-1", "unlockAll"), Self.command("once-2", "unlockAll"))
            await world.modify(world.mac, "_defaultZone", Self.command("once-3", "unlockAll"))
            let collected = await world.collect(world.phone, channel, from: start)
            #expect(collected.lines == ["cmd-once query recordCreated once-1 RemoteCommand _defaultZone"])
            #expect(collected.of("once-1")?["alert"] == .object(["body": .string("Unlock requested")]), "an alert with only a body has only body")
            let lookup = await world.op("subscriptions/lookup", world.phone, #"{"subscriptions":[{"subscriptionID":"cmd-once"},{"subscriptionID":"sub-blocked"}]}"#)
            let items = lookup.items("subscriptions")
            #expect(items.first?["subscriptionID"]?.stringValue == "cmd-once" && items.first?["serverErrorCode"]?.stringValue == "NOT_FOUND", "\(lookup)")
            #expect(items.last?["subscriptionType"]?.stringValue == "query", "\(lookup)")
            let list = await world.fixture.send("GET", "/database/1/\(World.container)/production/private/subscriptions/list", token: world.phone)
            #expect(list.status == 200 && !list.description.contains("cmd-once"), "\(list)")
        }
    }

    @Test func zoneAndDatabaseSubscriptionsFireOnWhatTheyCover() async throws {
        try await World.with { world in
            await world.modify(world.mac, "Lists", Self.list("create", "locked-mac", "mac"))
            let (channel, start) = await world.channel(world.phone)
            await world.subscribe(world.phone, #"{"subscriptionID":"lists-zone","subscriptionType":"zone","zoneID":{"zoneName":"Lists"},"notificationInfo":{"shouldSendContentAvailable":true}}"#)
            await world.modify(world.mac, "Lists", Self.list("create", "locked-phone", "phone"))
            await world.modify(world.mac, "Lists", Self.list("forceUpdate", "locked-phone", "phone 2"))
            await world.modify(world.mac, "_defaultZone", Self.command("zone-elsewhere", "lockAll"))
            await world.modify(world.mac, "Lists", Self.forceDelete("locked-phone"))
            let zone = await world.collect(world.phone, channel, from: start)
            #expect(zone.lines == ["lists-zone zone recordCreated locked-phone LockedAppList Lists", "lists-zone zone recordUpdated locked-phone LockedAppList Lists",
                                   "lists-zone zone recordDeleted locked-phone LockedAppList Lists"])
            #expect(zone.notifications.allSatisfy { $0["alert"] == nil }, "no title, body or sound: no alert")

            await world.subscribe(world.phone, #"{"subscriptionID":"db-changes","subscriptionType":"database","firesOn":["update","delete"]}"#)
            await world.modify(world.mac, "_defaultZone", Self.command("db-1", "lockAll"))
            await world.modify(world.mac, "Lists", Self.list("forceUpdate", "locked-mac", "mac again"))
            await world.modify(world.mac, "_defaultZone", Self.forceDelete("db-1"))
            #expect(await world.collect(world.phone, channel, from: zone.cursor).lines == [
                "db-changes database recordUpdated locked-mac LockedAppList Lists", "lists-zone zone recordUpdated locked-mac LockedAppList Lists",
                "db-changes database recordDeleted db-1 RemoteCommand _defaultZone",
            ], "db-changes: every zone, on update and delete only")
            let deleted = await world.op("subscriptions/modify", world.phone, #"{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"db-changes"}},{"operationType":"delete","subscription":{"subscriptionID":"lists-zone"}},{"operationType":"delete","subscription":{"subscriptionID":"no-such"}}]}"#)
            let items = deleted.items("subscriptions")
            #expect(items.filter { $0["deleted"]?.boolValue == true }.count == 2, "\(deleted)")
            #expect(items.last?["subscriptionID"]?.stringValue == "no-such" && items.last?["serverErrorCode"]?.stringValue == "NOT_FOUND", "\(deleted)")
        }
    }

    @Test func firesOnDeleteEvaluatesThePredicateOnTheRecordAsItWas() async throws {
        try await World.with { world in
            await world.modify(world.mac, "Events", NotificationTests.event("evt-01", "BlockedAppEvent", "Safari"), NotificationTests.event("evt-02", "FailedAuthEvent", "Safari"),
                               NotificationTests.event("evt-03", "BlockedAppEvent", "Mail"), NotificationTests.event("evt-05", "BlockedAppEvent", "Safari"))
            let (channel, start) = await world.channel(world.phone)
            await world.subscribe(world.phone, #"{"subscriptionID":"sub-blocked","subscriptionType":"query","query":{"recordType":"BlockedAppEvent"},"firesOn":["create"],"notificationInfo":{"title":"Blocked","soundName":"default"}}"#,
                                  #"{"subscriptionID":"safari-removed","subscriptionType":"query","zoneID":{"zoneName":"Events"},"query":{"recordType":"BlockedAppEvent","filterBy":[{"fieldName":"appName","comparator":"EQUALS","fieldValue":{"value":"Safari","type":"STRING"}}]},"firesOn":["delete"],"notificationInfo":{"title":"Safari event removed","desiredKeys":["appName"]}}"#)
            let lookup = await world.op("records/lookup", world.mac, #"{"zoneID":{"zoneName":"Events"},"records":[{"recordName":"evt-01"}]}"#)
            let tag = lookup.record("evt-01")?["recordChangeTag"]?.stringValue ?? ""
            let delete = await world.modify(world.mac, "Events", #"{"operationType":"delete","record":{"recordName":"evt-01","recordChangeTag":"\#(tag)"}}"#)
            #expect(delete.itemCodes == ["ok"], "\(delete)")
            await world.modify(world.mac, "Events", Self.forceDelete("evt-03"))
            await world.modify(world.mac, "Events", Self.forceDelete("evt-02"))
            await world.modify(world.mac, "Events", Self.forceDelete("evt-05"), NotificationTests.event("evt-53", "BlockedAppEvent", "Safari"))
            let collected = await world.collect(world.phone, channel, from: start)
            #expect(collected.lines == ["safari-removed query recordDeleted evt-01 BlockedAppEvent Events", "safari-removed query recordDeleted evt-05 BlockedAppEvent Events",
                                        "sub-blocked query recordCreated evt-53 BlockedAppEvent Events"])
            #expect(collected.of("evt-01")?["fields"]?["appName"]?["value"]?.stringValue == "Safari", "the fields of the record as it was")

            // An update changes what fires; bad subscriptions are item errors.
            let update = await world.op("subscriptions/modify", world.phone, """
                {"operations":[{"operationType":"update","subscription":{"subscriptionID":"sub-blocked","subscriptionType":"query","query":{"recordType":"BlockedAppEvent"},"firesOn":["create"],"notificationInfo":{"title":"Blocked (v2)","soundName":"default"}}},\
                {"operationType":"update","subscription":{"subscriptionID":"never-made","subscriptionType":"database"}},\
                {"operationType":"create","subscription":{"subscriptionID":"bad-zone","subscriptionType":"zone","zoneID":{"zoneName":"NoSuchZone"}}},\
                {"operationType":"create","subscription":{"subscriptionID":"bad-comparator","subscriptionType":"query","query":{"recordType":"BlockedAppEvent","filterBy":[{"fieldName":"appName","comparator":"SOUNDS_LIKE","fieldValue":{"value":"x"}}]}}}]}
                """)
            #expect(update.items("subscriptions").map { $0["serverErrorCode"]?.stringValue ?? "ok" } == ["ok", "NOT_FOUND", "ZONE_NOT_FOUND", "BAD_REQUEST"], "\(update)")
            await world.modify(world.mac, "Events", NotificationTests.event("evt-v2", "BlockedAppEvent", "Safari"))
            let after = await world.collect(world.phone, channel, from: collected.cursor)
            #expect(after.lines == ["sub-blocked query recordCreated evt-v2 BlockedAppEvent Events"] && after.of("evt-v2")?["alert"]?["title"]?.stringValue == "Blocked (v2)")
        }
    }

    @Test func deleteSelfCascadesNotifyTheirDeletesOnTheDevelopmentChannel() async throws {
        try await World.with { world in
            let production = await world.channel(world.phone)
            let made = await world.op("zones/modify", world.mac, #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Tree"}}}]}"#, environment: "development")
            #expect(made.status == 200)
            await world.subscribe(world.phone, #"{"subscriptionID":"tree-deletes","subscriptionType":"zone","zoneID":{"zoneName":"Tree"},"firesOn":["delete"]}"#,
                                  #"{"subscriptionID":"child-a-gone","subscriptionType":"query","query":{"recordType":"Child","filterBy":[{"fieldName":"label","comparator":"EQUALS","fieldValue":{"value":"a","type":"STRING"}}]},"firesOn":["delete"]}"#,
                                  environment: "development")
            let (channel, start) = await world.channel(world.phone, environment: "development")
            #expect(channel != production.path, "development and production share no channel")
            func child(_ name: String, _ label: String, _ parent: String) -> String {
                #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Child","fields":{"label":{"value":"\#(label)"},"parent":{"value":{"recordName":"\#(parent)","action":"DELETE_SELF"},"type":"REFERENCE"}}}}"#
            }
            await world.modify(world.mac, "Tree", #"{"operationType":"create","record":{"recordName":"P","recordType":"Parent","fields":{"label":{"value":"root"}}}}"#, environment: "development")
            await world.modify(world.mac, "Tree", child("C1", "a", "P"), child("C2", "b", "P"), environment: "development")
            await world.modify(world.mac, "Tree", child("G", "a", "C1"), environment: "development")
            await world.modify(world.mac, "Tree", Self.forceDelete("P"), environment: "development")
            let lines = await world.collect(world.phone, channel, from: start).lines.sorted()
            #expect(lines == ["child-a-gone query recordDeleted C1 Child Tree", "child-a-gone query recordDeleted G Child Tree",
                              "tree-deletes zone recordDeleted C1 Child Tree", "tree-deletes zone recordDeleted C2 Child Tree",
                              "tree-deletes zone recordDeleted G Child Tree", "tree-deletes zone recordDeleted P Parent Tree"])
        }
    }

    @Test func firesOnceUnderConcurrentWritesInEightZonesFiresOnce() async throws {
        try await World.with { world in
            let zones = (1...8).map { #"{"operationType":"create","zone":{"zoneID":{"zoneName":"Par\#($0)"}}}"# }.joined(separator: ",")
            #expect(await world.op("zones/modify", world.mac, #"{"operations":[\#(zones)]}"#).status == 200)
            let (channel, start) = await world.channel(world.phone)
            for round in 1...6 {
                await world.subscribe(world.phone, #"{"subscriptionID":"race-once-\#(round)","subscriptionType":"database","firesOn":["create"],"firesOnce":true}"#)
                await withTaskGroup(of: Void.self) { group in
                    for zone in 1...8 {
                        group.addTask { await world.modify(world.mac, "Par\(zone)", Self.command("race-\(round)-\(zone)", "lockAll")) }
                    }
                }
            }
            let lines = await world.collect(world.phone, channel, from: start).lines
            for round in 1...6 {
                #expect(lines.filter { $0.hasPrefix("race-once-\(round) ") }.count == 1, "race-once-\(round): \(lines)")
            }
        }
    }

    @Test func onlyTheOwnerReadsAChannelFromACursorOfIt() async throws {
        try await World.with { world in
            let (channel, cursor) = await world.channel(world.phone)
            func poll(_ path: String, _ token: String?) async -> Answer { await world.fixture.send("GET", path, token: token) }
            for (path, what) in [("\(channel)?since=\(cursor)&wait=0", "bob on alice's channel"), ("\(channel)?wait=0", "bob without a cursor")] {
                let answer = await poll(path, world.bob)
                #expect(answer.status == 404 && answer.serverErrorCode == "NOT_FOUND", "\(what): \(answer)")
            }
            let id = channel.split(separator: "/").last.map(String.init) ?? ""
            let forgedID = String(id.dropLast(2)) + (id.dropLast().last == "A" ? "B" : "A") + String(id.suffix(1))
            let forged = await poll("/webcourier/1/\(forgedID)?wait=0", world.phone)
            #expect(forged.status == 404 && forged.serverErrorCode == "NOT_FOUND", "a forged channel: \(forged)")
            let forgedCursor = String(cursor.dropLast(3)) + (cursor.dropLast(2).last == "A" ? "B" : "A") + String(cursor.suffix(2))
            let bobs = await world.channel(world.bob)
            #expect(bobs.path != channel)
            for (since, what) in [(forgedCursor, "a forged cursor"), ("not-a-cursor", "a malformed cursor"), (bobs.cursor, "bob's cursor")] {
                let answer = await poll("\(channel)?since=\(since)&wait=0", world.phone)
                #expect(answer.status == 400 && answer.serverErrorCode == "BAD_REQUEST", "\(what): \(answer)")
            }
            let own = await poll("\(bobs.path)?since=\(bobs.cursor)&wait=0", world.bob)
            #expect(own.status == 200 && own.items("notifications").isEmpty, "\(own)")
            for bad in ["56", "-1", "abc"] {
                let answer = await poll("\(channel)?since=\(cursor)&wait=\(bad)", world.phone)
                #expect(answer.status == 400 && answer.serverErrorCode == "BAD_REQUEST", "wait=\(bad): \(answer)")
            }
            let unknown = await poll("\(channel)?since=\(cursor)&wait=0", "not-a-token")
            #expect(unknown.status == 401 && unknown.serverErrorCode == "AUTHENTICATION_FAILED", "\(unknown)")
            let missing = await poll("\(channel)?since=\(cursor)&wait=0", nil)
            #expect(missing.status == 401 && missing.serverErrorCode == "AUTHENTICATION_REQUIRED", "\(missing)")
        }
    }
}
