import Foundation
import Testing
import NimbusCore
import NimbusPush
import NimbusPushSender
import NimbusSupport
@testable import NimbusStore

@Suite struct ClaimedPushRequestTests {
    func claim(_ kind: PushKind, collapse: String? = nil) -> ClaimedPush {
        ClaimedPush(outboxID: 1, attempt: 2, kind: kind, apnsID: "0b0e1a2c-3d4e-8f60-8a1b-2c3d4e5f6a7b", collapseKey: collapse,
                    expiresAt: 1_790_000_000_999, registrationID: 3, apnsEnvironment: .development, apnsToken: "ab01",
                    topic: "com.example.AppLocker", userID: 4, deviceTokenID: "t", container: "iCloud.a", environment: .production,
                    notificationID: "n", notification: .object(["alert": .object(["title": .string("Blocked")])]), cursor: "C",
                    longPollFirst: false, badge: false)
    }

    @Test func anAlertGoesAtPriorityTenWithoutCollapseID() throws {
        let request = try #require(claim(.alert, collapse: "zone").apnsRequest(maxPayloadBytes: 4096))
        #expect(request.pushType == .alert && request.priority == .immediate && request.collapseID == nil)
        #expect(request.apnsID == UUID(uuidString: "0b0e1a2c-3d4e-8f60-8a1b-2c3d4e5f6a7b"))
        #expect(request.expiration == 1_790_000_000)
        #expect(request.deviceToken == "ab01" && request.environment == .development && request.topic == "com.example.AppLocker")
        #expect(request.invalidReason == nil)
    }

    @Test func aBackgroundPushGoesAtPriorityFiveCollapsedByZone() throws {
        let request = try #require(claim(.background, collapse: "zone-7").apnsRequest(maxPayloadBytes: 4096))
        #expect(request.pushType == .background && request.priority == .conservePower && request.collapseID == "zone-7")
        #expect(try JSONValue.parse(request.payload).objectValue?["aps"] == .object(["content-available": .integer(1)]))
    }

    @Test func answersAndFailuresBecomeWhatTheOutboxRecords() {
        #expect(PushAnswer(APNsResponse(status: 429, reason: .tooManyRequests, retryAfterSeconds: 3))
                == PushAnswer(status: 429, reason: "TooManyRequests", retryAfterSeconds: 3))
        #expect(PushAnswer(APNsClientError.connection(APNsConnectionFailure(kind: .couldNotConnect, code: 7, detail: "refused"))) == PushAnswer(status: nil))
        #expect(PushAnswer(APNsClientError.shutDown) == PushAnswer(status: nil))
        #expect(PushAnswer(APNsClientError.invalidRequest("bad")).status == 400)
    }
}
