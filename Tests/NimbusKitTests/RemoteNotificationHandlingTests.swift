import Foundation
import Testing
@testable import NimbusKit

/// `SyncEngine.handleRemoteNotification` against the real server: the push's notification is read
/// from the channel as the server's sender reads it (the webcourier object and the cursor just
/// past it) and handed to the engine as APNs would.
@Suite("Handling pushes")
struct RemoteNotificationHandlingTests {
    /// A user with a Mac writing events and a phone (engine, subscription, open channel).
    struct Scene {
        let server: TestServer
        let mac: Database
        let phone: Device

        static func make() async throws -> Scene {
            let server = try TestServer.startWithPush()
            let mac = server.container(token: try server.device(user: "alice", device: "mac")).privateDatabase
            let phone = try Device.make(server, token: try server.device(user: "alice", device: "iphone"))
            _ = try await phone.database.save(Subscription.query("events", recordType: "Event",
                                                                 notificationInfo: .init(title: "New event")))
            return Scene(server: server, mac: mac, phone: phone)
        }

        /// What the sender would push for the next notification after `cursor`.
        func nextPush(after cursor: NotificationCursor) async throws -> (NimbusNotification, [AnyHashable: Any]) {
            var found: NimbusNotification?
            _ = try await eventually {
                found = try await phone.database.pollNotifications(from: cursor, wait: 5).notifications.first
                return found != nil
            }
            let notification = try #require(found)
            // The last of a page carries the page's cursor: the position just past it.
            let page = try await phone.database.pollNotifications(from: cursor, wait: 0)
            #expect(page.notifications.map(\.notificationID) == [notification.notificationID])
            return (notification, userInfo(notification, cursor: page.cursor.value))
        }

        func userInfo(_ n: NimbusNotification, cursor: String) -> [AnyHashable: Any] {
            var nimbus: [String: Any] = ["notificationID": n.notificationID, "subscriptionID": n.subscriptionID,
                                         "notificationType": n.kind.rawValue, "reason": n.reason.rawValue,
                                         "container": TestServer.container, "environment": "development", "cursor": cursor]
            if let id = n.recordID {
                nimbus["recordName"] = id.recordName
                nimbus["zoneID"] = ["zoneName": id.zoneID.zoneName]
            }
            nimbus["recordType"] = n.recordType
            return ["aps": ["alert": ["title": "New event"], "mutable-content": 1], "nimbus": nimbus]
        }
    }

    @Test func aHandledPushIsNotDeliveredAgainByTheChannel() async throws {
        let scene = try await Scene.make()
        defer { scene.server.stop() }
        let engine = scene.phone.engine
        #expect(try await engine.pollNotifications().isEmpty)  // opens the channel at the current position
        let start = try #require(await engine.notificationCursor)
        let first = event("first")
        _ = try await scene.mac.save(first)
        let (sent, userInfo) = try await scene.nextPush(after: start)

        guard case .newData(let push, let earlier) = await engine.handleRemoteNotification(userInfo) else {
            Issue.record("the push was not handled")
            return
        }
        #expect(push.notificationID == sent.notificationID)
        #expect(earlier.isEmpty)
        #expect(scene.phone.replica.record(first.id)?.fields["title"] == .string("first"))  // the catch-up fetch ran
        // The cursor itself moved past it (not only the engine's memory of ids)...
        let cursor = try #require(await engine.notificationCursor)
        #expect(cursor != start)
        #expect(try await scene.phone.database.pollNotifications(from: cursor, wait: 0).notifications.isEmpty)
        // ...so the engine's channel does not deliver it again, nor does the same push twice.
        #expect(try await engine.pollNotifications(wait: 1).isEmpty)
        guard case .alreadyDelivered = await engine.handleRemoteNotification(userInfo) else {
            Issue.record("the same push was handled twice")
            return
        }
        // The channel still brings what comes next.
        let second = event("second")
        _ = try await scene.mac.save(second)
        var next: [NimbusNotification] = []
        _ = try await eventually {
            next += try await engine.pollNotifications(wait: 5)
            return !next.isEmpty
        }
        #expect(next.map(\.recordID) == [second.id])
    }

    @Test func aPushBeforeTheChannelWasOpenedPositionsIt() async throws {
        let scene = try await Scene.make()
        defer { scene.server.stop() }
        let reader = try await scene.phone.database.notificationChannel()
        _ = try await scene.mac.save(event("first"))
        let (_, userInfo) = try await scene.nextPush(after: reader.start)
        // Written after the push was sent, before it is handled: the channel must still bring it.
        let second = event("second")
        _ = try await scene.mac.save(second)
        #expect(await scene.phone.engine.notificationCursor == nil)
        guard case .newData = await scene.phone.engine.handleRemoteNotification(userInfo) else {
            Issue.record("the push was not handled")
            return
        }
        var next: [NimbusNotification] = []
        _ = try await eventually {
            next += try await scene.phone.engine.pollNotifications(wait: 2)
            return !next.isEmpty
        }
        #expect(next.map(\.recordID) == [second.id])
    }

    @Test func notificationsBeforeThePushedOneAreHandedOver() async throws {
        let scene = try await Scene.make()
        defer { scene.server.stop() }
        let engine = scene.phone.engine
        #expect(try await engine.pollNotifications().isEmpty)
        let start = try #require(await engine.notificationCursor)
        let first = event("first")
        _ = try await scene.mac.save(first)
        let (_, firstPush) = try await scene.nextPush(after: start)
        let cursorAfterFirst = try RemoteNotification(userInfo: firstPush).cursor
        let second = event("second")
        _ = try await scene.mac.save(second)
        let channelURL = start.channelURL
        let (_, secondPush) = try await scene.nextPush(after: NotificationCursor(channelURL: channelURL, value: cursorAfterFirst))
        // The first push never came (a merged background push, a phone that was off): the second
        // one's handling hands the first over, once.
        guard case .newData(_, let earlier) = await engine.handleRemoteNotification(secondPush) else {
            Issue.record("the push was not handled")
            return
        }
        #expect(earlier.map(\.recordID) == [first.id])
        #expect(try await engine.pollNotifications(wait: 1).isEmpty)
        guard case .alreadyDelivered = await engine.handleRemoteNotification(firstPush) else {
            Issue.record("the first push was shown twice")
            return
        }
    }

    @Test func eachNotificationIsDeliveredOnceWhetherPushOrChannelComesFirst() async throws {
        let scene = try await Scene.make()
        defer { scene.server.stop() }
        let engine = scene.phone.engine
        #expect(try await engine.pollNotifications().isEmpty)
        var senderCursor = try #require(await engine.notificationCursor)
        let delivered = Locked<[String]>([])
        let channel = Task {
            for try await notification in engine.notifications(waitSeconds: 5) {
                delivered.withLock { $0.append(notification.notificationID) }
            }
        }
        defer { channel.cancel() }
        var sent: [String] = []
        for round in 0..<6 {
            _ = try await scene.mac.save(event("round \(round)"))
            let (notification, userInfo) = try await scene.nextPush(after: senderCursor)
            senderCursor = NotificationCursor(channelURL: senderCursor.channelURL,
                                              value: try RemoteNotification(userInfo: userInfo).cursor)
            sent.append(notification.notificationID)
            // The push races the parked long-poll; a few rounds give it a head start.
            if round % 2 == 1 { try await Task.sleep(nanoseconds: 300_000_000) }
            switch await engine.handleRemoteNotification(userInfo) {
            case .newData(let push, let earlier):
                delivered.withLock { $0 += [push.notificationID] + earlier.map(\.notificationID) }
            case .alreadyDelivered: break
            case .failed(let error, _): Issue.record("\(error)")
            }
        }
        _ = try await eventually { Set(delivered.withLock { $0 }) == Set(sent) }
        try await Task.sleep(nanoseconds: 1_500_000_000)  // a late duplicate would show by now
        #expect(delivered.withLock { $0 }.sorted() == sent.sorted())
    }

    @Test func theServiceExtensionFetchesFieldsThePushLeftOut() async throws {
        let scene = try await Scene.make()
        defer { scene.server.stop() }
        let reader = try await scene.phone.database.notificationChannel()
        let first = event("first")
        _ = try await scene.mac.save(first)
        var (_, userInfo) = try await scene.nextPush(after: reader.start)
        var nimbus = try #require(userInfo["nimbus"] as? [String: Any])
        nimbus["fieldsOmitted"] = true
        userInfo["nimbus"] = nimbus
        let helper = NotificationServiceHelper(database: scene.phone.database) { push, fields in
            fields["title"]?.stringValue.map { BannerText(title: push.recordType ?? "?", body: $0) }
        }
        #expect(await helper.banner(for: userInfo) == BannerText(title: "Event", body: "first"))
        // Without a database to fetch from: the push's own alert text.
        let offline = NotificationServiceHelper(database: nil) { _, fields in fields["title"]?.stringValue.map { BannerText(title: "", body: $0) } }
        #expect(await offline.banner(for: userInfo) == BannerText(title: "New event", body: "Open the app to see it."))
    }

    @Test func aPushOfAnotherContainerIsRefused() async throws {
        let scene = try await Scene.make()
        defer { scene.server.stop() }
        let info = scene.userInfo(NimbusNotification(notificationID: "n", subscriptionID: "s", kind: .query, reason: .recordCreated,
                                                     recordID: nil, recordType: "Event", alert: nil, contentAvailable: false, fields: [:],
                                                     cursor: NotificationCursor(channelURL: scene.server.url, value: "x")), cursor: "x")
        var other = info
        var nimbus = try #require(info["nimbus"] as? [String: Any])
        nimbus["container"] = "iCloud.other"
        other["nimbus"] = nimbus
        guard case .failed(let error, _) = await scene.phone.engine.handleRemoteNotification(other) else {
            Issue.record("a push of another container was applied")
            return
        }
        #expect(error.reason.contains("iCloud.other"))
        guard case .failed(let malformed, nil) = await scene.phone.engine.handleRemoteNotification(["aps": [:]]) else {
            Issue.record("a malformed push was applied")
            return
        }
        #expect(malformed.code == .invalidArguments)
    }
}
