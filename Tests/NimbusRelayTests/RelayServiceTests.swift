import Foundation
import NimbusHTTP
import NimbusPush
import NimbusSupport
import Testing
@testable import NimbusRelay

/// The relay's protocol in process: the service's answers to signed, unsigned, stale, replayed,
/// revoked and malformed requests, with a transport that records what would go to APNs.
@Suite struct RelayServiceTests {
    @Test func aSignedPushIsForwardedAndAPNsAnswerComesBack() async throws {
        let fixture = try RelayFixture()
        defer { fixture.remove() }
        let response = await fixture.service.respond(to: fixture.signed(fixture.push()))
        #expect(response.status == .ok)
        let answer = try RelayWire.decodeAnswer(status: 200, retryAfterHeader: nil, body: response.body).get()
        #expect(answer.status == 200)
        #expect(fixture.transport.sent.count == 1)
        #expect(fixture.transport.sent.first?.topic == "com.example.App")

        // A dead token's answer passes back with its reason and time.
        fixture.transport.answer = APNsResponse(status: 410, reason: .unregistered, unregisteredAt: 1_790_000_000_000)
        let dead = await fixture.service.respond(to: fixture.signed(fixture.push()))
        let deadAnswer = try RelayWire.decodeAnswer(status: dead.status.code, retryAfterHeader: nil, body: dead.body).get()
        #expect(deadAnswer == APNsResponse(status: 410, reason: .unregistered, unregisteredAt: 1_790_000_000_000))
    }

    @Test func aWrongCredentialIsRefusedWith401() async throws {
        let fixture = try RelayFixture()
        defer { fixture.remove() }
        // Right id, wrong secret.
        let forged = try RelayCredentials(name: "op1", installationID: fixture.credentials.installationID,
                                          secret: try RelayCredentials.make(name: "x").secret)
        let response = await fixture.service.respond(to: fixture.signed(fixture.push(), with: forged))
        try fixture.expectError(response, status: 401, code: "AUTHENTICATION_FAILED", saying: "signature does not match")
        // An id the relay never issued.
        let stranger = try RelayCredentials.make(name: "stranger")
        try fixture.expectError(await fixture.service.respond(to: fixture.signed(fixture.push(), with: stranger)),
                                status: 401, code: "AUTHENTICATION_FAILED", saying: "Unknown installation")
        // No signature at all.
        try fixture.expectError(await fixture.service.respond(to: HTTPRequest(head: HTTPRequestHead(method: "POST", target: "/v1/push"), body: fixture.push())),
                                status: 401, code: "AUTHENTICATION_REQUIRED", saying: "signed request")
        #expect(fixture.transport.sent.isEmpty)
    }

    @Test func aRevokedInstallationIsRefusedFromTheNextRequestOn() async throws {
        let fixture = try RelayFixture()
        defer { fixture.remove() }
        #expect(await fixture.service.respond(to: fixture.signed(fixture.push())).status == .ok)
        try fixture.file.update { (list: inout [Installation]) throws(InstallationFile.Failure) in
            list[0].revokedAt = 1
            list[0].signingKey = []
        }
        try fixture.expectError(await fixture.service.respond(to: fixture.signed(fixture.push())), status: 401, code: "AUTHENTICATION_FAILED", saying: "revoked")
        #expect(fixture.transport.sent.count == 1)
    }

    @Test func staleAndFutureTimestampsAndReplaysAreRefused() async throws {
        let fixture = try RelayFixture()
        defer { fixture.remove() }
        let now = fixture.clock.nowMilliseconds() / 1000
        try fixture.expectError(await fixture.service.respond(to: fixture.signed(fixture.push(), timestamp: now - 301)),
                                status: 401, code: "AUTHENTICATION_FAILED", saying: "301 s behind")
        try fixture.expectError(await fixture.service.respond(to: fixture.signed(fixture.push(), timestamp: now + 301)),
                                status: 401, code: "AUTHENTICATION_FAILED", saying: "ahead of")
        // At the edge of the window: accepted.
        #expect(await fixture.service.respond(to: fixture.signed(fixture.push(), timestamp: now - 300)).status == .ok)
        let request = fixture.signed(fixture.push())
        #expect(await fixture.service.respond(to: request).status == .ok)
        try fixture.expectError(await fixture.service.respond(to: request), status: 401, code: "AUTHENTICATION_FAILED", saying: "replay")
        #expect(fixture.transport.sent.count == 2)
    }

    @Test func malformedInputIs400AndNothingIsForwarded() async throws {
        let fixture = try RelayFixture()
        defer { fixture.remove() }
        try fixture.expectError(await fixture.service.respond(to: fixture.signed(Array(#"{"deviceToken":"zz"}"#.utf8))),
                                status: 400, code: "BAD_REQUEST", saying: "malformed")
        try fixture.expectError(await fixture.service.respond(to: fixture.signed(Array("not json".utf8))), status: 400, code: "BAD_REQUEST", saying: "JSON object")
        var request = fixture.signed(fixture.push())
        request.head.headers.replaceOrAdd(name: "Nimbus-Relay-Timestamp", value: "soon")
        try fixture.expectError(await fixture.service.respond(to: request), status: 400, code: "BAD_REQUEST", saying: "Nimbus-Relay-Timestamp")
        // Another app of the publisher's team: not this relay's to push to.
        try fixture.expectError(await fixture.service.respond(to: fixture.signed(fixture.push(topic: "com.example.Other"))),
                                status: 400, code: "BAD_REQUEST", saying: "does not push to com.example.Other")
        #expect(fixture.transport.sent.isEmpty)
        #expect(await fixture.service.respond(to: HTTPRequest(head: HTTPRequestHead(method: "GET", target: "/v1/push"))).status == .methodNotAllowed)
        #expect(await fixture.service.respond(to: HTTPRequest(head: HTTPRequestHead(method: "POST", target: "/v2/push"))).status == .notFound)
    }

    @Test func theRateLimitAllowsNThenAnswers429WithRetryAfter() async throws {
        let fixture = try RelayFixture(pushesPerMinute: 3)
        defer { fixture.remove() }
        for _ in 0..<3 { #expect(await fixture.service.respond(to: fixture.signed(fixture.push())).status == .ok) }
        let refused = await fixture.service.respond(to: fixture.signed(fixture.push()))
        try fixture.expectError(refused, status: 429, code: "THROTTLED", saying: "3 pushes a minute")
        #expect(refused.headers["Retry-After"] == "20")
        fixture.clock.advance(milliseconds: 20_000)
        #expect(await fixture.service.respond(to: fixture.signed(fixture.push())).status == .ok)
        #expect(fixture.transport.sent.count == 4)
    }

    @Test func noAnswerFromAPNsIs503WithTheFailure() async throws {
        let fixture = try RelayFixture()
        defer { fixture.remove() }
        fixture.transport.failure = .connection(APNsConnectionFailure(kind: .couldNotConnect, code: 7, detail: "refused"))
        let response = await fixture.service.respond(to: fixture.signed(fixture.push()))
        try fixture.expectError(response, status: 503, code: "TRY_AGAIN_LATER", saying: "couldNotConnect")
        guard case .failure(.connection(let failure)) = RelayWire.decodeAnswer(status: 503, retryAfterHeader: nil, body: response.body) else {
            Issue.record("not a connection failure"); return
        }
        #expect(failure.kind == .couldNotConnect)
    }

    @Test func anInstallationListOthersCanReadFailsClosed() async throws {
        let fixture = try RelayFixture()
        defer { fixture.remove() }
        chmod(fixture.file.path, 0o644)
        try fixture.expectError(await fixture.service.respond(to: fixture.signed(fixture.push())), status: 503, code: "TRY_AGAIN_LATER", saying: "installation list")
        #expect(throws: InstallationFile.Failure.self) { try fixture.file.read() }
        #expect(fixture.transport.sent.isEmpty)
    }
}
