import Foundation
import NimbusSupport
import Testing
@testable import NimbusPush

/// The client against the real HTTP/2-over-TLS stand-in (Tests/push/apns-standin.py), one per test.
@Suite struct APNsClientTests {
    static let token = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

    static func alert(token: String = token, apnsID: UUID = UUID(), payload: String = #"{"aps":{"alert":{"title":"Blocked"},"mutable-content":1}}"#) -> APNsRequest {
        APNsRequest(deviceToken: token, environment: .production, topic: APNsStandIn.topic, pushType: .alert, priority: .immediate,
                    apnsID: apnsID, expiration: 1_790_000_000, payload: Array(payload.utf8))
    }

    @Test func anAlertIsAcceptedAndArrivesWithApplesHeadersAndAValidToken() async throws {
        let standIn = try APNsStandIn.start()
        defer { standIn.finish() }
        let client = try standIn.makeClient()
        defer { client.shutdown() }

        let id = UUID()
        let response = try await client.send(Self.alert(apnsID: id))
        #expect(response == APNsResponse(status: 200, apnsID: id))
        var background = Self.alert(payload: #"{"aps":{"content-available":1}}"#)
        background.environment = .development
        background.pushType = .background
        background.priority = .conservePower
        background.collapseID = "zone-Clipboard"
        #expect(try await client.send(background).status == 200)

        let requests = try standIn.requests()
        try #require(requests.count == 2)
        let headers = try #require(requests[0]["headers"])
        #expect(headers[":method"] == "POST")
        #expect(headers[":path"] == .string("/3/device/" + Self.token))
        #expect(headers["apns-topic"] == .string(APNsStandIn.topic))
        #expect(headers["apns-push-type"] == "alert")
        #expect(headers["apns-priority"] == "10")
        #expect(headers["apns-id"] == .string(id.uuidString.lowercased()))
        #expect(headers["apns-expiration"] == "1790000000")
        #expect(headers["apns-collapse-id"] == nil)
        #expect(requests[0]["payload"]?["aps"]?["mutable-content"] == 1)
        #expect(requests[0]["jwt"]?["kid"] == .string(APNsStandIn.keyID))
        #expect(requests[0]["jwt"]?["iss"] == .string(APNsStandIn.teamID))
        #expect(requests[1]["headers"]?["apns-push-type"] == "background")
        #expect(requests[1]["headers"]?["apns-priority"] == "5")
        #expect(requests[1]["headers"]?["apns-collapse-id"] == "zone-Clipboard")
        // Both environments go to the one override URL, on one connection.
        #expect(requests[0]["connection"] == requests[1]["connection"])
    }

    @Test func errorStatusesComeBackAsAnswersWithTheirReasons() async throws {
        let standIn = try APNsStandIn.start()
        defer { standIn.finish() }
        let client = try standIn.makeClient()
        defer { client.shutdown() }

        let byPrefix: [(String, Int, APNsReason)] = [("ffff0400", 400, .badDeviceToken), ("ffff0410", 410, .unregistered),
                                                     ("ffff0429", 429, .tooManyRequests), ("ffff0500", 500, .internalServerError),
                                                     ("ffff0503", 503, .serviceUnavailable)]
        for (prefix, status, reason) in byPrefix {
            let id = UUID()
            let response = try await client.send(Self.alert(token: prefix + String(Self.token.dropFirst(8)), apnsID: id))
            #expect(response.status == status)
            #expect(response.reason == reason)
            #expect(response.apnsID == id)
            #expect((response.unregisteredAt != nil) == (status == 410), "\(reason)")
            #expect(response.retryAfterSeconds == (status == 429 ? 3 : nil), "\(reason)")
        }
        var wrongTopic = Self.alert()
        wrongTopic.topic = "com.example.other"
        #expect(try await client.send(wrongTopic) == APNsResponse(status: 400, reason: "TopicDisallowed", apnsID: wrongTopic.apnsID))

        try standIn.command(["answer": ["status": 500, "reason": "InternalServerError", "retryAfter": 7]])
        let commanded = try await client.send(Self.alert())
        #expect(commanded.status == 500 && commanded.reason == "InternalServerError" && commanded.retryAfterSeconds == 7)
    }

    @Test func anExpiredProviderTokenIsRenewedAndTheRequestSentOnceMore() async throws {
        let standIn = try APNsStandIn.start()
        defer { standIn.finish() }
        let clock = TestClock()
        let client = try standIn.makeClient(clock: clock)
        defer { client.shutdown() }

        #expect(try await client.send(Self.alert()).status == 200)
        let firstIssuedAt = clock.nowMilliseconds() / 1000
        // The stand-in now calls every token issued so far expired; ten seconds later the client signs anew.
        try standIn.command(["rejectIssuedBefore": .integer(firstIssuedAt + 1)])
        clock.advance(seconds: 10)
        let id = UUID()
        #expect(try await client.send(Self.alert(apnsID: id)) == APNsResponse(status: 200, apnsID: id))

        let requests = try standIn.requests()
        try #require(requests.count == 3)
        #expect(requests[1]["reason"] == "ExpiredProviderToken")
        #expect(requests[1]["jwt"]?["iat"] == .integer(firstIssuedAt))
        #expect(requests[2]["status"] == 200)
        #expect(requests[2]["jwt"]?["iat"] == .integer(firstIssuedAt + 10))
        #expect(requests[1]["apnsID"] == requests[2]["apnsID"])

        // A renewed token refused again is APNs' answer, not a loop: one retry only.
        let refused = try await client.send(Self.alert(token: "ffff0403" + String(Self.token.dropFirst(8))))
        #expect(refused.status == 403 && refused.reason == "ExpiredProviderToken")
        #expect(try standIn.requests().count == 5)
    }

    @Test func fiftyConcurrentSendsAreStreamsOfOneTLSConnection() async throws {
        let standIn = try APNsStandIn.start()
        defer { standIn.finish() }
        let client = try standIn.makeClient()
        defer { client.shutdown() }
        // Answers held a second keep the streams open together (even on a loaded machine).
        try standIn.command(["delayMillis": 1000])

        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 {
                group.addTask { try await client.send(Self.alert()).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == [Int](repeating: 200, count: 50))
        let requests = try standIn.requests()
        #expect(requests.count == 50)
        #expect(Set(requests.compactMap { $0["connection"]?.stringValue }).count == 1)
        #expect(Set(requests.compactMap { $0["stream"]?.int64Value }).count == 50)
        let mostOpen = requests.compactMap { $0["openStreams"]?.int64Value }.max() ?? 0
        #expect(mostOpen >= 10, "at most \(mostOpen) streams were open at once")
    }

    @Test func aRefusedConnectionIsAConnectionErrorNotAnAnswer() async throws {
        let standIn = try APNsStandIn.start()
        defer { standIn.finish() }
        let client = try standIn.makeClient()
        defer { client.shutdown() }
        standIn.stop()

        let error = try await #require(throws: APNsClientError.self) { try await client.send(Self.alert()) }
        guard case .connection(let failure) = error else { Issue.record("expected a connection error, got \(error)"); return }
        #expect(failure.kind == .couldNotConnect, "\(failure)")
    }

    @Test func theClientReconnectsWhenTheStandInComesBack() async throws {
        let standIn = try APNsStandIn.start()
        defer { standIn.finish() }
        let client = try standIn.makeClient()
        defer { client.shutdown() }

        #expect(try await client.send(Self.alert()).status == 200)
        try standIn.restart()
        #expect(try await client.send(Self.alert()).status == 200)
        standIn.stop()
        await #expect(throws: APNsClientError.self) { try await client.send(Self.alert()) }
        try standIn.restart()
        #expect(try await client.send(Self.alert()).status == 200)

        let connections = try standIn.requests().compactMap { $0["connection"]?.stringValue }
        #expect(connections.count == 3)
        #expect(Set(connections).count == 3)
    }

    @Test func aConnectionDroppedMidRequestIsAConnectionLost() async throws {
        let standIn = try APNsStandIn.start()
        defer { standIn.finish() }
        let client = try standIn.makeClient()
        defer { client.shutdown() }
        try standIn.command(["delayMillis": 5000])

        async let outcome: APNsResponse = client.send(Self.alert())
        // Bounded wait for the request to reach the stand-in, then drop it. The bound is generous: with
        // 900 tests in parallel on 2 cores the stand-in once logged nothing within 10 s, was stopped
        // during the TLS handshake, and the failure was (rightly) a TLS one, not the loss tested here.
        let deadline = Date().addingTimeInterval(45)
        while try standIn.requests().isEmpty && Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
        try #require(try !standIn.requests().isEmpty, "the request did not reach the stand-in within 45 s")
        standIn.stop()
        do {
            let response = try await outcome
            Issue.record("expected a connection error, got \(response)")
        } catch let error as APNsClientError {
            guard case .connection(let failure) = error else { Issue.record("expected a connection error, got \(error)"); return }
            #expect(failure.kind == .connectionLost, "\(failure)")
        }
    }

    @Test func anAnswerSlowerThanTheRequestTimeoutIsATimeout() async throws {
        let standIn = try APNsStandIn.start()
        defer { standIn.finish() }
        let client = try standIn.makeClient(requestTimeoutMilliseconds: 500)
        defer { client.shutdown() }
        try standIn.command(["delayMillis": 3000])

        let error = try await #require(throws: APNsClientError.self) { try await client.send(Self.alert()) }
        guard case .connection(let failure) = error else { Issue.record("expected a connection error, got \(error)"); return }
        #expect(failure.kind == .timedOut, "\(failure)")

        // The client goes on working once answers come in time again.
        try standIn.command([:])
        #expect(try await client.send(Self.alert()).status == 200)
    }

    @Test func aServerThatDoesNotSpeakHTTP2IsRefused() async throws {
        let standIn = try APNsStandIn.start(http1: true)
        defer { standIn.finish() }
        let client = try standIn.makeClient()
        defer { client.shutdown() }

        let error = try await #require(throws: APNsClientError.self) { try await client.send(Self.alert()) }
        guard case .connection(let failure) = error else { Issue.record("expected a connection error, got \(error)"); return }
        #expect(failure.detail.contains("without HTTP/2"), "\(failure)")
        // It did answer, over HTTP/1.1: the refusal is the client's.
        #expect(try standIn.requests().first?["http1"]?.stringValue?.hasPrefix("POST /3/device/") == true)
    }

    @Test func aServerOutsideTheTrustedCAsIsATLSError() async throws {
        let standIn = try APNsStandIn.start()
        defer { standIn.finish() }
        let client = try APNsClient(credentials: standIn.credentials, configuration: .init(baseURL: standIn.baseURL))
        defer { client.shutdown() }

        let error = try await #require(throws: APNsClientError.self) { try await client.send(Self.alert()) }
        guard case .connection(let failure) = error else { Issue.record("expected a connection error, got \(error)"); return }
        #expect(failure.kind == .tls, "\(failure)")
        #expect(try standIn.requests().isEmpty)
    }

    @Test func requestsThatCannotGoOnTheWireAreRefusedBeforeIt() async throws {
        let directory = try ScratchDirectory("nimbus-apns")
        defer { directory.remove() }
        let key = try APNsProviderKey(pem: TestKeys.makeP256(in: directory).privatePEM)
        let credentials = try APNsCredentials(key: key, keyID: "KEY1234567", teamID: "TEAM123456")
        // Nothing listens on port 9 of loopback: a request that got through would fail differently.
        let client = try APNsClient(credentials: credentials, configuration: .init(baseURL: "https://127.0.0.1:9"))

        var odd = Self.alert(token: "abc")
        await #expect(throws: APNsClientError.invalidRequest("the device token is not even-length hexadecimal")) { try await client.send(odd) }
        odd = Self.alert(token: "ab/../cd")
        await #expect(throws: APNsClientError.invalidRequest("the device token is not even-length hexadecimal")) { try await client.send(odd) }
        var injected = Self.alert()
        injected.topic = "com.example\r\nx-evil: 1"
        await #expect(throws: APNsClientError.self) { try await client.send(injected) }
        injected = Self.alert()
        injected.collapseID = String(repeating: "z", count: 65)
        await #expect(throws: APNsClientError.invalidRequest("the collapse id is over 64 bytes or not visible ASCII")) { try await client.send(injected) }

        client.shutdown()
        await #expect(throws: APNsClientError.shutDown) { try await client.send(Self.alert()) }
    }

    @Test func configurationsThatCannotWorkAreRefusedNamingTheSetting() throws {
        for (configuration, words) in [
            (APNsClient.Configuration(baseURL: "http://127.0.0.1:8443"), "https://HOST[:PORT]"),
            (APNsClient.Configuration(baseURL: "https://gateway.example/apns"), "has a path"),
            (APNsClient.Configuration(caFile: "/nonexistent/ca.pem"), "--apns-ca-file"),
        ] {
            #expect(configuration.problem?.contains(words) == true, "\(configuration)")
        }
        #expect(APNsClient.Configuration().baseURL(for: .development) == "https://api.sandbox.push.apple.com")
        #expect(APNsClient.Configuration().baseURL(for: .production) == "https://api.push.apple.com")
        #expect(APNsClient.Configuration(baseURL: "https://127.0.0.1:8443/").baseURL(for: .production) == "https://127.0.0.1:8443")
        #expect(APNsClient.Configuration(baseURL: "https://127.0.0.1:8443").problem == nil)
    }

    @Test func libcurlSpeaksHTTP2() {
        #expect(Curl.initialisation == nil, "\(Curl.initialisation ?? "")")
        #expect(APNsClient.libraryDescription.contains("nghttp2"))
        // Debian's libcurl keeps the system's CAs in a directory, so an extra CA file adds to them.
        #expect(Curl.defaultCADirectory == "/etc/ssl/certs")
    }
}
