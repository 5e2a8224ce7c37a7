import Foundation
import NimbusSupport

/// The sender's transport in relay mode (`nimbus serve --push relay --push-relay-url URL
/// --push-relay-credentials FILE`): each push is a signed `POST /v1/push` to the publisher's relay,
/// which holds the APNs key and answers with APNs' answer (docs/push.md "The relay").
///
/// Like `APNsClient`: every APNs answer, error statuses included, is an `APNsResponse`; no answer
/// throws `APNsClientError` (see `RelayWire.decodeAnswer` for how relay-level errors map).
package final class RelayTransport: PushTransport {
    package struct Configuration: Sendable {
        /// `http(s)://host[:port]` (a path prefix is allowed: a relay behind a proxy under one).
        package var url: String
        /// A PEM file of CA certificates trusted for an https relay (replaces libcurl's CA file).
        package var caFile: String?
        package var connectTimeoutMilliseconds = 10_000
        package var requestTimeoutMilliseconds = 30_000
        /// HTTP/1.1 connections kept to the relay (one request at a time on each).
        package var maxConnections = 8

        package init(url: String, caFile: String? = nil) {
            self.url = url
            self.caFile = caFile
        }

        /// Why `url` cannot be the relay's: only https, or http to a loopback address (a relay on
        /// the same machine, or tests): pushes carry notification content.
        package static func urlProblem(_ text: String) -> String? {
            guard let components = URLComponents(string: text), let scheme = components.scheme, let host = components.host, !host.isEmpty,
                  components.query == nil, components.fragment == nil, components.user == nil, components.password == nil else {
                return "the relay URL '\(text)' is not http(s)://HOST[:PORT][/PREFIX] (--push-relay-url)"
            }
            let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
            guard scheme == "https" || (scheme == "http" && loopback) else {
                return "the relay URL '\(text)' must be https (plain http only to a loopback address): pushes carry notification content (--push-relay-url)"
            }
            return nil
        }
    }

    private let configuration: Configuration
    private let credentials: RelayCredentials
    private let clock: any WallClock
    private let driver: CurlDriver
    private let endpoint: String

    package init(configuration: Configuration, credentials: RelayCredentials, clock: any WallClock = SystemClock()) throws(APNsClient.StartError) {
        if let problem = Configuration.urlProblem(configuration.url) { throw APNsClient.StartError(description: problem) }
        if let caFile = configuration.caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw APNsClient.StartError(description: "the relay CA file \(caFile) cannot be read")
        }
        self.configuration = configuration
        self.credentials = credentials
        self.clock = clock
        var base = configuration.url
        while base.hasSuffix("/") { base.removeLast() }
        endpoint = base + RelayWire.pushPath
        driver = try CurlDriver(maxConcurrentStreams: 1, maxHostConnections: configuration.maxConnections, threadName: "relay-curl")
    }

    deinit {
        driver.stop(timeout: nil)
    }

    package func shutdown() {
        driver.stop(timeout: .seconds(5))
    }

    package func send(_ request: APNsRequest) async throws -> APNsResponse {
        if let reason = request.invalidReason { throw APNsClientError.invalidRequest(reason) }
        let body = RelayWire.encode(request)
        // Signed over the path the relay sees; a prefix in the URL belongs to the proxy in front of it.
        let signature = RelaySignature.sign(method: "POST", path: RelayWire.pushPath, body: body, credentials: credentials,
                                            timestamp: clock.nowMilliseconds() / 1000)
        let headerLines = ["Content-Type: application/json"] + signature.headerFields.map { "\($0.name): \($0.value)" }
        let options = CurlExchange.Options(caFile: configuration.caFile, connectTimeoutMilliseconds: configuration.connectTimeoutMilliseconds,
                                           requestTimeoutMilliseconds: configuration.requestTimeoutMilliseconds)
        let exchange = try CurlExchange(url: endpoint, headerLines: headerLines, body: body, options: options)
        let answer = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<CurlExchange.Answer, any Error>) in
            exchange.attach(continuation)
            if !driver.submit(exchange) { exchange.fail(.shutDown) }
        }
        let retryAfter = answer.headers.first { $0.name.lowercased() == "retry-after" }?.value
        return try RelayWire.decodeAnswer(status: answer.status, retryAfterHeader: retryAfter, body: answer.body).get()
    }
}
