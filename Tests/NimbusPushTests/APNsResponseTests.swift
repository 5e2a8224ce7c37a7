import Foundation
import Testing
@testable import NimbusPush

@Suite struct APNsResponseTests {
    @Test func answersAreReadFromTheStatusHeadersAndJSONBody() {
        let id = UUID()
        let gone = APNsResponse(status: 410, headers: [("apns-id", id.uuidString.lowercased())],
                                body: Array(#"{"reason":"Unregistered","timestamp":1790000000123}"#.utf8))
        #expect(gone == APNsResponse(status: 410, reason: .unregistered, apnsID: id, unregisteredAt: 1_790_000_000_123))
        let throttled = APNsResponse(status: 429, headers: [("Retry-After", "12")], body: Array(#"{"reason":"TooManyRequests"}"#.utf8))
        #expect(throttled.reason == .tooManyRequests && throttled.retryAfterSeconds == 12)
        // A proxy's page instead of APNs' JSON, or a Retry-After that is a date: the status still counts.
        let proxy = APNsResponse(status: 502, headers: [("retry-after", "Fri, 27 Nov 2026 12:00:00 GMT")], body: Array("<html>".utf8))
        #expect(proxy == APNsResponse(status: 502))
    }

    @Test func eachAnswerGetsTheDispositionAPIMdGivesIt() {
        let cases: [(APNsResponse, APNsResponse.Disposition)] = [
            (APNsResponse(status: 200), .delivered),
            (APNsResponse(status: 410, reason: .unregistered), .removeRegistration),
            (APNsResponse(status: 400, reason: .badDeviceToken), .removeRegistration),
            (APNsResponse(status: 400, reason: .deviceTokenNotForTopic), .removeRegistration),
            (APNsResponse(status: 400, reason: .topicDisallowed), .giveUp),
            (APNsResponse(status: 413, reason: .payloadTooLarge), .giveUp),
            (APNsResponse(status: 403, reason: .invalidProviderToken), .giveUp),
            (APNsResponse(status: 403, reason: .expiredProviderToken), .retry(retryAfterSeconds: nil)),
            (APNsResponse(status: 429, reason: .tooManyRequests, retryAfterSeconds: 3), .retry(retryAfterSeconds: 3)),
            (APNsResponse(status: 500, reason: .internalServerError), .retry(retryAfterSeconds: nil)),
            (APNsResponse(status: 503, reason: .serviceUnavailable), .retry(retryAfterSeconds: nil)),
        ]
        for (response, disposition) in cases {
            #expect(response.disposition == disposition, "\(response)")
        }
    }
}
