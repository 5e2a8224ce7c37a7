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
}
