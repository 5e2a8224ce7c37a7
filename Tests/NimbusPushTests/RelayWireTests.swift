import Foundation
import NimbusSupport
import Testing
@testable import NimbusPush

/// The relay protocol's bodies and what each relay answer means to the sender.
@Suite struct RelayWireTests {
    static let request = APNsRequest(deviceToken: "a1b2c3d4e5f60718293a4b5c6d7e8f90", environment: .development, topic: "com.example.App",
                                     pushType: .background, priority: .conservePower, apnsID: UUID(), expiration: 1_790_000_000,
                                     collapseID: "zone-Clipboard", payload: Array(#"{"aps":{"content-available":1}}"#.utf8))

    @Test func aRequestRoundTripsExactly() throws {
        #expect(try RelayWire.decodeRequest(RelayWire.encode(Self.request)) == Self.request)
        var alert = Self.request
        alert.collapseID = nil
        alert.pushType = .alert
        alert.priority = .immediate
        #expect(try RelayWire.decodeRequest(RelayWire.encode(alert)) == alert)
    }

    @Test func malformedRequestsAreRefusedNamingTheMember() throws {
        let good = try #require(try JSONValue.parse(RelayWire.encode(Self.request)).objectValue)
        let cases: [(String, JSONValue?, String)] = [
            ("deviceToken", "not-hex/../", "device token"), ("deviceToken", nil, "'deviceToken' is missing"),
            ("environment", "staging", "'environment'"), ("pushType", "voip", "'pushType'"), ("priority", 7, "'priority'"),
            ("apnsID", "x", "'apnsID'"), ("expiration", -1, "'expiration'"), ("payload", "", "'payload'"),
            ("payload", "+/=", "'payload'"), ("topic", "com.example App", "topic"), ("collapseID", .string(String(repeating: "z", count: 65)), "collapse id"),
            ("extra", 1, "unknown member"),
        ]
        for (key, value, expected) in cases {
            var object = good
            object[key] = value
            do {
                _ = try RelayWire.decodeRequest(JSONValue.object(object).serialized())
                Issue.record("\(key)=\(String(describing: value)) was accepted")
            } catch {
                #expect(error.description.contains(expected), "\(key): \(error)")
            }
        }
        #expect(throws: RelayWire.DecodeError.self) { try RelayWire.decodeRequest(Array("[1]".utf8)) }
        #expect(throws: RelayWire.DecodeError.self) { try RelayWire.decodeRequest(Array("{".utf8)) }
    }

    @Test func apnsAnswersComeBackAsTheyWere() throws {
        let id = UUID()
        for answer in [APNsResponse(status: 200, apnsID: id),
                       APNsResponse(status: 410, reason: .unregistered, apnsID: id, unregisteredAt: 1_790_000_000_123),
                       APNsResponse(status: 400, reason: .badDeviceToken, apnsID: id),
                       APNsResponse(status: 429, reason: .tooManyRequests, apnsID: id, retryAfterSeconds: 3)] {
            let body = RelayWire.encode(answer)
            #expect(try RelayWire.decodeAnswer(status: 200, retryAfterHeader: nil, body: body).get() == answer)
        }
    }

    @Test func relayErrorsBecomeWhatTheSenderActsOn() {
        func answer(_ status: Int, _ body: String, retryAfter: String? = nil) -> Result<APNsResponse, APNsClientError> {
            RelayWire.decodeAnswer(status: status, retryAfterHeader: retryAfter, body: Array(body.utf8))
        }
        // The relay's rate limit: retried like APNs' 429, not sooner than it says.
        let limited = try? answer(429, #"{"serverErrorCode":"THROTTLED","reason":"over","retryAfter":7}"#, retryAfter: "7").get()
        #expect(limited == APNsResponse(status: 429, reason: .relayRateLimited, retryAfterSeconds: 7))
        guard case .failure(.connection(let refused)) = answer(401, #"{"serverErrorCode":"AUTHENTICATION_FAILED","reason":"revoked"}"#) else {
            Issue.record("401 is not a retried failure"); return
        }
        #expect(refused.code == 401 && refused.detail.contains("--push-relay-credentials") && refused.detail.contains("revoked"))
        guard case .failure(.invalidRequest(let reason)) = answer(400, #"{"reason":"The push is malformed"}"#) else {
            Issue.record("400 is not an invalid request"); return
        }
        #expect(reason.contains("malformed"))
        guard case .failure(.connection(let down)) = answer(503, #"{"serverErrorCode":"TRY_AGAIN_LATER","reason":"x","apnsFailure":"timedOut"}"#) else {
            Issue.record("503 is not a connection failure"); return
        }
        #expect(down.kind == .timedOut)
        guard case .failure(.connection(let odd)) = answer(200, "<html>") else { Issue.record("a 200 without an answer was taken"); return }
        #expect(odd.kind == .other)
    }
}
