import Foundation
import NimbusCore
import NimbusSupport
import Testing

/// Subscriptions and notification channels (docs/api.md "Subscriptions and notifications"), in
/// production with the AppLocker schema, in process (was scenario 42): what a device offline
/// during another's writes finds on its channel, in write order and pages; none of its own;
/// alerts and desiredKeys; no commit, no notification; firesOnce; zone and database
/// subscriptions; firesOn delete against the record as it was; cascades; who may poll.
@Suite struct NotificationTests {
    /// alice's mac and phone (and bob), the AppLocker schema deployed, zones Events and Lists.
    struct World {
        let fixture: APIFixture
        let mac: String, phone: String, bob: String
        static let container = "iCloud.com.mirxa.AppLocker"

        static func with(_ body: (World) async throws -> Void) async throws {
            var limits = Limits()
            limits.defaultResultsLimit = 16
            try await APIFixture.with(limits: limits) { fixture in
                let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../deploy/schemas/applocker.json")
                let schema = try ContainerSchema.parseFile(JSONValue.parse(Array(try Data(contentsOf: file))))
                try await fixture.database.store.schemas.importSchema(schema, environment: .production)
                let world = World(fixture: fixture, mac: try await fixture.token(device: "mac"), phone: try await fixture.token(device: "phone"),
                                  bob: try await fixture.token(user: "bob", device: "bobs-mac"))
                let zones = await world.op("zones/modify", world.mac, #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Events"}}},{"operationType":"create","zone":{"zoneID":{"zoneName":"Lists"}}}]}"#)
                #expect(zones.status == 200, "\(zones)")
                try await body(world)
            }
        }

        func op(_ operation: String, _ token: String, _ body: String, environment: String = "production") async -> Answer {
            await fixture.database(operation, token: token, body, environment: environment, container: Self.container)
        }

        /// subscriptions/modify create of each subscription; every item must be saved.
        func subscribe(_ token: String, _ subscriptions: String..., environment: String = "production") async {
            let operations = subscriptions.map { #"{"operationType":"create","subscription":\#($0)}"# }.joined(separator: ",")
            let answer = await op("subscriptions/modify", token, #"{"operations":[\#(operations)]}"#, environment: environment)
            #expect(answer.status == 200 && !answer.description.contains("serverErrorCode"), "\(answer)")
        }

        /// records/modify (not atomic) of `operations` in `zone`.
        @discardableResult
        func modify(_ token: String, _ zone: String, _ operations: String..., environment: String = "production") async -> Answer {
            let answer = await op("records/modify", token, #"{"zoneID":{"zoneName":"\#(zone)"},"operations":[\#(operations.joined(separator: ","))]}"#,
                                  environment: environment)
            #expect(answer.status == 200, "\(answer)")
            return answer
        }

        /// The device's channel (path) and cursor from tokens/create.
        func channel(_ token: String, environment: String = "production") async -> (path: String, cursor: String) {
            let answer = await op("tokens/create", token, "{}", environment: environment)
            return (APIFixture.path(of: answer.json["webcourierURL"]?.stringValue ?? ""), answer.json["cursor"]?.stringValue ?? "")
        }

        /// Polls (wait 0) from `cursor`, following moreComing: each notification as
        /// `subscriptionID type reason recordName recordType zoneName`, the notifications, the last cursor, the pages.
        func collect(_ token: String, _ channel: String, from cursor: String) async -> Collected {
            var collected = Collected(cursor: cursor)
            while collected.pages < 50 {
                let page = await fixture.send("GET", "\(channel)?since=\(collected.cursor)&wait=0", token: token)
                #expect(page.status == 200, "\(page)")
                collected.pages += 1
                collected.notifications += page.items("notifications")
                collected.cursor = page.json["cursor"]?.stringValue ?? collected.cursor
                if page.json["moreComing"]?.boolValue != true { break }
            }
            return collected
        }
    }

    struct Collected {
        var cursor: String
        var pages = 0
        var notifications: [JSONValue] = []
        var lines: [String] {
            notifications.map { n in
                ["subscriptionID", "notificationType", "reason", "recordName", "recordType"].map { n[$0]?.stringValue ?? "-" }.joined(separator: " ")
                    + " " + (n["zoneID"]?["zoneName"]?.stringValue ?? "-")
            }
        }
        func of(_ record: String) -> JSONValue? { notifications.first { $0["recordName"]?.stringValue == record } }
    }

    static func event(_ name: String, _ type: String, _ app: String) -> String {
        #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"\#(type)","fields":{"appName":{"value":"\#(app)"},"# +
            #""bundleID":{"value":"com.example.\#(app)"},"deviceName":{"value":"Mac mini"},"timestamp":{"value":1700000000000,"type":"TIMESTAMP"}}}}"#
    }

    static let blocked = #"{"subscriptionID":"sub-blocked","subscriptionType":"query","query":{"recordType":"BlockedAppEvent","filterBy":[]},"firesOn":["create"],"notificationInfo":{"title":"Blocked app opened","soundName":"default"}}"#
    static let failedAuth = #"{"subscriptionID":"sub-failed-auth","subscriptionType":"query","query":{"recordType":"FailedAuthEvent"},"firesOn":["create"],"notificationInfo":{"title":"Failed unlock attempt","alertBody":"Someone tried to open a locked app","soundName":"alarm.caf","shouldSendContentAvailable":true,"desiredKeys":["appName","deviceName"]}}"#

    @Test func anOfflineDeviceGetsEveryNotificationInWriteOrderAndNoneOfItsOwn() async throws {
        try await World.with { world in
            await world.subscribe(world.phone, Self.blocked, Self.failedAuth)
            let list = await world.fixture.send("GET", "/database/1/\(World.container)/production/private/subscriptions/list", token: world.mac)
            #expect(list.items("subscriptions").compactMap { $0["subscriptionID"]?.stringValue } == ["sub-blocked", "sub-failed-auth"], "\(list)")
            #expect(list.items("subscriptions").first?["firesOn"] == .array([.string("create")]), "\(list)")
            let created = await world.op("tokens/create", world.phone, "{}")
            #expect(created.json["webcourierURL"]?.stringValue?.hasPrefix(APIFixture.origin + "/webcourier/1/") == true, "an absolute URL: \(created)")
            #expect(created.json["apnsToken"]?.stringValue?.isEmpty == false && created.json["cursor"]?.stringValue?.isEmpty == false, "\(created)")
            let (channel, start) = await world.channel(world.phone)
            let macChannel = await world.channel(world.mac)
            #expect(macChannel.path == channel, "two devices of one user share a channel")
            var expected: [String] = []
            for i in 1...40 {
                let name = String(format: "evt-%02d", i)
                let (type, sub) = i % 2 == 1 ? ("BlockedAppEvent", "sub-blocked") : ("FailedAuthEvent", "sub-failed-auth")
                await world.modify(world.mac, "Events", Self.event(name, type, i % 4 == 1 || i % 4 == 2 ? "Safari" : "Mail"))
                expected.append("\(sub) query recordCreated \(name) \(type) Events")
                if i % 10 == 0 {  // records no subscription matches
                    await world.modify(world.mac, "_defaultZone", #"{"operationType":"create","record":{"recordName":"cmd-\#(i)","recordType":"RemoteCommand","fields":{"action":{"value":"lockAll"}}}}"#)
                }
            }
            let phone = await world.collect(world.phone, channel, from: start)
            #expect(phone.lines == expected, "in write order: \(phone.lines)")
            #expect(phone.pages >= 3, "40 notifications at 16 a page came in \(phone.pages) pages")
            #expect(Set(phone.notifications.compactMap { $0["notificationID"]?.stringValue }).count == 40)
            let blocked = phone.of("evt-01"), failed = phone.of("evt-02")
            #expect(blocked?["alert"]?["title"]?.stringValue == "Blocked app opened" && blocked?["alert"]?["soundName"]?.stringValue == "default")
            #expect(blocked?["fields"] == nil && blocked?["contentAvailable"]?.boolValue == false, "\(String(describing: blocked))")
            #expect(failed?["alert"]?["body"]?.stringValue == "Someone tried to open a locked app" && failed?["alert"]?["soundName"]?.stringValue == "alarm.caf")
            #expect(failed?["contentAvailable"]?.boolValue == true)
            let fields = failed?["fields"]?.objectValue.map { Set($0.map(\.key)) }
            #expect(fields == ["appName", "deviceName"] && failed?["fields"]?["appName"]?["value"]?.stringValue == "Safari", "desiredKeys only")
            #expect(await world.collect(world.phone, channel, from: phone.cursor).lines.isEmpty, "nothing new after the last cursor")
            #expect(await world.collect(world.mac, channel, from: start).lines.isEmpty, "the writing device gets none of its own")
        }
    }

    @Test func aLivePollWakesForAnotherDevicesWriteEvenBehindAPageOfItsOwn() async throws {
        try await World.with { world in
            await world.subscribe(world.phone, Self.blocked)
            let (channel, start) = await world.channel(world.phone)
            let polled = Date()
            let phonePoll = world.fixture.start("GET", "\(channel)?since=\(start)&wait=30", token: world.phone)
            let macPoll = world.fixture.start("GET", "\(channel)?since=\(start)&wait=2", token: world.mac)
            #expect(await world.fixture.parked(2))
            await world.modify(world.mac, "Events", Self.event("evt-live", "BlockedAppEvent", "Safari"))
            let woken = await phonePoll.answer()
            #expect(Date().timeIntervalSince(polled) < LongPollTests.atOnce, "the phone's poll answered at once")
            #expect(woken.trimmedJSON["notifications"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } == ["evt-live"], "\(woken)")
            let own = await macPoll.answer()
            #expect(own.trimmedJSON["notifications"]?.arrayValue?.isEmpty == true, "the mac's own write: \(own)")
            #expect(Date().timeIntervalSince(polled) >= 1.9, "the mac's own write did not wake its poll: it ended at its wait")
            let cursor = woken.trimmedJSON["cursor"]?.stringValue ?? ""

            // More than a page of the mac's own notifications before the phone's.
            let waiting = world.fixture.start("GET", "\(channel)?since=\(cursor)&wait=30", token: world.mac)
            #expect(await world.fixture.parked(1))
            await world.modify(world.mac, "Events", (1...20).map { Self.event(String(format: "own-%02d", $0), "BlockedAppEvent", "Mail") }.joined(separator: ","))
            let sent = Date()
            await world.modify(world.phone, "Events", Self.event("from-phone", "BlockedAppEvent", "Safari"))
            let answer = await waiting.answer()
            #expect(Date().timeIntervalSince(sent) < LongPollTests.atOnce)
            #expect(answer.trimmedJSON["notifications"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } == ["from-phone"], "\(answer)")
            #expect(await world.collect(world.mac, channel, from: cursor).lines == ["sub-blocked query recordCreated from-phone BlockedAppEvent Events"])
            #expect(await world.collect(world.phone, channel, from: cursor).lines.filter { $0.contains(" own-") }.count == 20)
        }
    }

    @Test func noCommitNoNotification() async throws {
        try await World.with { world in
            await world.subscribe(world.phone, Self.blocked, Self.failedAuth)
            let (channel, start) = await world.channel(world.phone)
            await world.modify(world.mac, "Events", Self.event("evt-01", "BlockedAppEvent", "Safari"), Self.event("evt-02", "FailedAuthEvent", "Safari"))
            let cursor = await world.collect(world.phone, channel, from: start).cursor
            let atomic = await world.op("records/modify", world.mac, #"{"zoneID":{"zoneName":"Events"},"atomic":true,"operations":[\#(Self.event("evt-atomic", "BlockedAppEvent", "Safari")),{"operationType":"forceUpdate","record":{"recordName":"evt-01","recordType":"BlockedAppEvent","fields":{"appName":{"value":"Changed"}}}}]}"#)
            #expect(atomic.description.contains("ATOMIC_ERROR"), "\(atomic)")
            let retry = await world.modify(world.mac, "Events", Self.event("evt-01", "BlockedAppEvent", "Safari"))
            #expect(retry.itemCodes == ["ok"], "the idempotent create retry: \(retry)")
            await world.modify(world.mac, "Events", Self.event("evt-51", "BlockedAppEvent", "Safari"),
                               #"{"operationType":"update","record":{"recordName":"evt-02","recordType":"FailedAuthEvent","recordChangeTag":"zzz","fields":{}}}"#,
                               Self.event("evt-52", "FailedAuthEvent", "Mail"))
            #expect(await world.collect(world.phone, channel, from: cursor).lines == [
                "sub-blocked query recordCreated evt-51 BlockedAppEvent Events", "sub-failed-auth query recordCreated evt-52 FailedAuthEvent Events",
            ])
        }
    }
}
