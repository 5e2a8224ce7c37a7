import Foundation
import NimbusAdmin
import NimbusCore
import NimbusStore
import NimbusSupport
import Testing

/// The console's Push page API (docs/console.md "Push"): the queue, registrations with their APNs
/// token shortened, the last outcome, the delivery log with its errors.
@Suite struct AdminPushTests {
    static let container = "iCloud.test.App"
    static let phoneToken = "0123456789abcdef" + String(repeating: "ab", count: 24)

    /// alice's mac writes a Note her phone (registered for push) is subscribed to: one push queued.
    static func queueOnePush(_ admin: AdminFixture) async throws -> (mac: Session, phone: Session) {
        let mac = try await admin.database.session(user: "alice", device: "mac")
        let phone = try await admin.database.session(user: "alice", device: "phone")
        try await admin.store.pushRegistrations.register(phone, PushRegistrationRequest(apnsEnvironment: .development, apnsToken: phoneToken))
        let subscription = try Subscription.parse(.object([
            "subscriptionID": "events", "subscriptionType": "query", "query": .object(["recordType": "Note"]),
            "notificationInfo": .object(["title": "Blocked"]),
        ]), schema: [:], limits: Limits())
        _ = try await admin.store.subscriptions.modifySubscriptions(mac, operations: [.save(subscription, mustExist: false)])
        let create = RecordOperation(kind: .create, recordName: "n1", recordType: "Note", changeTag: nil, fields: [])
        _ = try await admin.store.records.modifyRecords(mac, zoneName: "_defaultZone", operations: [.success(create)], atomic: true,
                                                        limits: Limits())
        return (mac, phone)
    }

    static let push = PushSettings(mode: .direct, topics: [container: "com.test.App"])

    @Test func thePageShowsModeQueueAndRegistrationsWithTheTokenShortened() async throws {
        try await AdminFixture.with(push: Self.push) { admin in
            let (_, phone) = try await Self.queueOnePush(admin)
            let answer = await admin.send("GET", "/api/push")
            #expect(answer.status == 200, "\(answer)")
            #expect(answer.json["mode"]?.stringValue == "direct")
            #expect(answer.json["topics"]?[Self.container]?.stringValue == "com.test.App")
            #expect(answer.json["queue"]?["depth"]?.int64Value == 1, "\(answer)")
            #expect(answer.json["queue"]?["oldestQueuedAt"]?.int64Value != nil, "\(answer)")
            #expect(answer.json["sinceStart"]?["queued"]?.int64Value == 1, "\(answer)")
            #expect(answer.json["registrationCount"]?.int64Value == 1)
            let registration = try #require(answer.items("registrations").first)
            #expect(registration["tokenID"]?.stringValue == phone.tokenID)
            #expect(registration["deviceName"]?.stringValue == "phone")
            #expect(registration["apnsToken"]?.stringValue == "01234567…")
            #expect(registration["queued"]?.int64Value == 1)
            #expect(registration["lastOutcome"] == .null)
            // Not the whole token, nor any more of it than the first eight digits.
            let body = String(decoding: answer.body, as: UTF8.self)
            #expect(!body.contains("012345678"), "\(answer)")
        }
    }

    @Test func theLogAndTheLastOutcomeFollowWhatTheSenderRecorded() async throws {
        try await AdminFixture.with(push: Self.push) { admin in
            _ = try await Self.queueOnePush(admin)
            let claimed = try #require(try await admin.store.pushOutbox.claimDuePushes(limit: 1).first)
            try await admin.store.pushOutbox.recordOutcome(claimed, answer: PushAnswer(status: 410, reason: "Unregistered"))
            let log = await admin.send("GET", "/api/push/log?user=alice")
            #expect(log.status == 200, "\(log)")
            let entry = try #require(log.items("entries").first)
            #expect(entry["outcome"]?.stringValue == "removed")
            #expect(entry["status"]?.int64Value == 410)
            #expect(entry["reason"]?.stringValue == "Unregistered")
            #expect(entry["attempts"]?.int64Value == 1)
            #expect(entry["byLongPoll"] == .bool(false))
            #expect(entry["deviceName"]?.stringValue == "phone")
            // The registration went with its dead token; the queue is empty.
            let page = await admin.send("GET", "/api/push")
            #expect(page.json["queue"]?["depth"]?.int64Value == 0 && page.items("registrations").isEmpty, "\(page)")
        }
    }

    @Test func badFiltersAreRefusedSayingWhy() async throws {
        try await AdminFixture.with(push: Self.push) { admin in
            let unknown = await admin.send("GET", "/api/push/log?user=carol")
            #expect(unknown.status == 404 && unknown.json["reason"]?.stringValue?.contains("carol") == true, "\(unknown)")
            let token = await admin.send("GET", "/api/push/log?tokenID=tok_nothing")
            #expect(token.status == 404 && token.json["reason"]?.stringValue?.contains("tok_nothing") == true, "\(token)")
            let both = await admin.send("GET", "/api/push/log?user=alice&tokenID=tok_x")
            #expect(both.status == 400, "\(both)")
            let limit = await admin.send("GET", "/api/push/log?limit=0")
            #expect(limit.status == 400 && limit.json["reason"]?.stringValue?.contains("limit") == true, "\(limit)")
            #expect(await admin.send("GET", "/api/push?user=carol").status == 404)
            #expect(await admin.send("GET", "/api/push", token: .some(nil)).status == 401)
        }
    }
}
