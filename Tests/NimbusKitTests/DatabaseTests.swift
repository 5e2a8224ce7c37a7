import Foundation
import Testing
@testable import NimbusKit

/// The client against the real server: every operation of docs/api.md once, typed values both ways.
@Suite("Database client against the real server")
struct DatabaseTests {
    @Test func savesLooksUpQueriesAndDeletesTypedRecords() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let db = server.container(token: try server.device(user: "ada", device: "mac")).privateDatabase
        let when = Date(timeIntervalSince1970: 1_795_000_000.123)
        var event = Record(recordType: "Event")
        event.set("title", "Safari")
        event.set("count", 3)
        event.set("ratio", 0.5)
        event.set("timestamp", when)
        event.set("blob", Data([0, 1, 2, 255]))
        event.set("tags", ["a", "b"])
        event.set("parent", Reference(recordID: RecordID(recordName: "p1")))
        let saved = try await db.save(event)
        #expect(saved.changeTag != nil)
        #expect(saved.fields["title"] == .string("Safari"))
        #expect(saved.fields["count"] == .int64(3))
        #expect(saved.fields["ratio"] == .double(0.5))
        #expect(saved.fields["timestamp"]?.dateValue.map(WireTime.milliseconds) == WireTime.milliseconds(when))
        #expect(saved.fields["blob"] == .bytes(Data([0, 1, 2, 255])))
        #expect(saved.fields["tags"] == .strings(["a", "b"]))
        #expect(saved.fields["parent"]?.referenceValue?.recordID.recordName == "p1")

        // A retried create of the same content is a no-op with the same tag.
        let again = try await db.modify([.create(event)])
        #expect(try again[0].get() == .saved(saved))

        // Update sends only the changed field; a stale tag is serverRecordChanged with the server copy.
        var edited = saved
        edited.set("title", "Mail")
        #expect(edited.changedKeys == ["title"])
        let updated = try await db.save(edited)
        #expect(updated.fields["title"] == .string("Mail"))
        #expect(updated.fields["count"] == .int64(3))
        let stale = try await db.modify([.save(edited)])
        #expect(throws: NimbusError.self) { try stale[0].get() }
        if case .failure(let error) = stale[0] {
            #expect(error.code == .serverRecordChanged)
            #expect(error.serverRecord?.changeTag == updated.changeTag)
        }

        let looked = try await db.lookup([event.id, RecordID(recordName: "missing")])
        #expect(try looked[0].get().fields["title"] == .string("Mail"))
        if case .failure(let error) = looked[1] { #expect(error.code == .unknownItem) } else { Issue.record("missing record found") }

        for n in 0..<5 {
            var other = Record(recordType: "Event")
            other.set("title", "t\(n)")
            other.set("timestamp", when.addingTimeInterval(Double(n)))
            _ = try await db.save(other)
        }
        let page = try await db.query(Query(recordType: "Event", filters: [.beginsWith("title", "t")], sort: [.descending("timestamp")]),
                                      resultsLimit: 3)
        #expect(page.records.map { $0.fields["title"]?.stringValue } == ["t4", "t3", "t2"])
        let rest = try await db.query(Query(recordType: "Event", filters: [.beginsWith("title", "t")], sort: [.descending("timestamp")]),
                                      continuation: page.continuation)
        #expect(rest.records.map { $0.fields["title"]?.stringValue } == ["t1", "t0"])
        let older = try await db.query(Query(recordType: "Event", filters: [.lessThan("timestamp", when.addingTimeInterval(2)),
                                                                            .in("title", ["t0", "t1", "t3"])]))
        #expect(Set(older.records.compactMap { $0.fields["title"]?.stringValue }) == ["t0", "t1"])

        try await db.delete(event.id)
        try await db.delete(event.id)  // deleting a missing record succeeds
        let gone = try await db.lookup([event.id])
        if case .failure(let error) = gone[0] { #expect(error.code == .unknownItem) } else { Issue.record("deleted record found") }
    }

    @Test func changesZonesAndSubscriptions() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let db = server.container(token: try server.device(user: "bob", device: "mac")).privateDatabase
        let zone = ZoneID("Work")
        try await db.createZone(zone)
        #expect(try await db.zones().map(\.zoneID).contains(zone))
        let first = try await db.changes(in: zone, since: nil)
        #expect(first.modified.isEmpty)
        var note = Record(recordType: "Note", id: .make(in: zone))
        note.set("text", "hello")
        _ = try await db.save(note)
        let second = try await db.changes(in: zone, since: first.syncToken)
        #expect(second.modified.map(\.id) == [note.id])
        try await db.delete(note.id)
        let third = try await db.changes(in: zone, since: second.syncToken)
        #expect(third.deleted.map(\.id) == [note.id])
        let dbChanges = try await db.databaseChanges(since: nil)
        #expect(dbChanges.changedZones.contains(zone))

        do { _ = try await db.changes(in: ZoneID("Nope"), since: nil); Issue.record("a missing zone answered") } catch let error as NimbusError {
            #expect(error.code == .zoneNotFound)
        }
    }

    @Test func subscriptionsAndTheNotificationChannel() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let mac = server.container(token: try server.device(user: "cy", device: "mac")).privateDatabase
        let phone = server.container(token: try server.device(user: "cy", device: "phone")).privateDatabase
        let info = Subscription.NotificationInfo(title: "App Blocked", alertLocalizationKey: "appName", soundName: "default",
                                                 shouldSendContentAvailable: true, desiredKeys: ["appName"])
        let saved = try await phone.save(Subscription.query("sub-blocked", recordType: "BlockedAppEvent", firesOn: [.create],
                                                            notificationInfo: info))
        #expect(saved.notificationInfo.title == "App Blocked")
        #expect(try await phone.subscriptions().map(\.subscriptionID) == ["sub-blocked"])
        let channel = try await phone.notificationChannel()
        var event = Record(recordType: "BlockedAppEvent")
        event.set("appName", "Safari")
        _ = try await mac.save(event)
        var iterator = channel.makeAsyncIterator()
        let notification = try await iterator.next()
        #expect(notification?.alert?.title == "App Blocked")
        #expect(notification?.recordID == event.id)
        #expect(notification?.fields["appName"] == .string("Safari"))
        #expect(notification?.reason == .recordCreated)
        try await phone.deleteSubscription("sub-blocked")
        #expect(try await phone.subscriptions().isEmpty)
    }

    @Test func wrongTokenAndUnreachableServerAreClearErrors() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let wrong = server.container(token: "not-a-token").privateDatabase
        await #expect(throws: NimbusError.self) { _ = try await wrong.save(Record(recordType: "Event")) }
        do { _ = try await wrong.zones() } catch let error as NimbusError {
            #expect(error.code == .notAuthenticated)
            #expect(!error.isRetryable)
        }
        let nowhere = Container(identifier: TestServer.container,
                                configuration: NimbusConfiguration(serverURL: URL(string: "http://127.0.0.1:9")!, token: "x",
                                                                   requestTimeout: 3)).privateDatabase
        do { _ = try await nowhere.zones(); Issue.record("an unreachable server answered") } catch let error as NimbusError {
            #expect(error.code == .networkFailure)
            #expect(error.isRetryable)
        }
    }
}
