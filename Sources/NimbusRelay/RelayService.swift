import NimbusHTTP
import NimbusPush
import NimbusSupport

/// The relay's HTTP side (docs/push.md "The relay"): `POST /v1/push` authenticated by the
/// installation's signature, fresh, within its rate, forwarded to APNs; APNs' answer passed back.
/// It keeps no notification content: the body is forwarded and dropped; what stays is the
/// installation list (a file the CLI writes), nonces for the replay window and the rate buckets.
package final class RelayService: Sendable {
    package struct Configuration: Sendable {
        /// How far a request's timestamp may be from the relay's clock, and how long nonces are kept.
        package var replayWindowSeconds: Int64 = 300
        /// The named, defaulted limit: pushes a minute per installation (`--pushes-per-minute`).
        package var pushesPerMinute = RelayService.defaultPushesPerMinute
        /// The publisher's bundle ids (`--topics`): the APNs key is good for every app of its team, and
        /// an installation may push only to these.
        package var topics: Set<String> = []

        package init() {}
    }

    package static let defaultPushesPerMinute = 600

    private let book: InstallationBook
    private let transport: any PushTransport
    private let clock: any WallClock
    private let replays: Lock<ReplayWindow>
    private let rates: Lock<InstallationRateLimiter>
    private let topics: Set<String>
    private let logger = Logger(subsystem: "relay")

    package init(book: InstallationBook, transport: any PushTransport, configuration: Configuration = Configuration(),
                 clock: any WallClock = SystemClock()) {
        self.book = book
        self.transport = transport
        self.clock = clock
        topics = configuration.topics
        replays = Lock(ReplayWindow(windowSeconds: configuration.replayWindowSeconds))
        rates = Lock(InstallationRateLimiter(perMinute: configuration.pushesPerMinute))
    }

    /// For `HTTPServer`: each request answered from a task of its own.
    package var handler: HTTPServer.Handler {
        { request, writer in
            Task { writer.respond(await self.respond(to: request)) }
        }
    }

    package func respond(to request: HTTPRequest) async -> HTTPResponse {
        switch (request.method, request.path) {
        case ("POST", RelayWire.pushPath):
            do {
                return try await push(request)
            } catch {
                return error.response
            }
        case (_, RelayWire.pushPath):
            var response = RelayError(.methodNotAllowed, "BAD_REQUEST", "\(request.method) is not allowed on \(request.path); use POST.").response
            response.headers.add(name: "Allow", value: "POST")
            return response
        case ("GET", "/health"):
            return HTTPResponse(status: .ok, contentType: "application/json", body: Array(#"{"status":"ok"}"#.utf8))
        default:
            return RelayError(.notFound, "NOT_FOUND", "There is nothing at \(request.path).").response
        }
    }

    private func push(_ request: HTTPRequest) async throws(RelayError) -> HTTPResponse {
        let installation = try authenticate(request)
        switch rates.withLock({ $0.take(installationID: installation.id, nowMilliseconds: clock.nowMilliseconds()) }) {
        case .allowed: break
        case .refused(let seconds):
            logger.info("rate limited", ["installation": installation.name, "retryAfter": seconds])
            throw RelayError(.tooManyRequests, "THROTTLED", "Installation \(installation.name) is over its limit of "
                             + "\(rates.withLock { $0.perMinute }) pushes a minute; retry after \(seconds) s.", retryAfter: seconds)
        }
        let push: APNsRequest
        do {
            push = try RelayWire.decodeRequest(request.body)
        } catch {
            throw .badRequest("The push is malformed: \(error.description).")
        }
        guard topics.contains(push.topic) else {
            throw .badRequest("This relay does not push to \(push.topic); it serves \(topics.sorted().joined(separator: ", ")).")
        }
        let answer: APNsResponse
        do {
            answer = try await transport.send(push)
        } catch let error as APNsClientError {
            throw Self.relayError(for: error, logger: logger, installation: installation.name)
        } catch {
            logger.error("forwarding failed", ["installation": installation.name, "error": "\(error)"])
            throw RelayError(.internalServerError, "INTERNAL_ERROR", "The relay failed to forward the push.")
        }
        logger.debug("forwarded", ["installation": installation.name, "status": answer.status, "reason": answer.reason?.rawValue ?? "-"])
        return HTTPResponse(status: .ok, contentType: "application/json", body: RelayWire.encode(answer))
    }

    /// The installation that signed `request`, or why it is refused (docs/push.md "The relay": the order
    /// of the checks; the signature is checked before the timestamp, so only a key holder learns of its skew).
    private func authenticate(_ request: HTTPRequest) throws(RelayError) -> Installation {
        guard let parsed = RelaySignature.parse(headerValues: { request.headers.values(for: $0) }) else {
            throw RelayError(.unauthorized, "AUTHENTICATION_REQUIRED",
                             "This relay needs a signed request (the \(RelaySignature.installationHeader), -Timestamp, -Nonce and -Signature headers).")
        }
        let signature: RelaySignature
        switch parsed {
        case .success(let value): signature = value
        case .failure(let error): throw .badRequest("The request's signature headers are malformed: \(error.description).")
        }
        let found: Installation?
        do {
            found = try book.installation(id: signature.installationID)
        } catch {
            logger.error("cannot read the installation list", ["error": error.description])
            throw RelayError(.serviceUnavailable, "TRY_AGAIN_LATER", "The relay cannot read its installation list.", retryAfter: 10)
        }
        guard let installation = found else { throw .authenticationFailed("Unknown installation \(signature.installationID).") }
        guard !installation.isRevoked else {
            logger.info("refused a revoked installation", ["installation": installation.name])
            throw .authenticationFailed("Installation \(installation.name) was revoked at this relay.")
        }
        guard signature.verifies(method: request.method, path: request.path, body: request.body, signingKey: installation.signingKey) else {
            logger.info("refused a bad signature", ["installation": installation.name])
            throw .authenticationFailed("The signature does not match installation \(installation.name)'s key.")
        }
        let now = clock.nowMilliseconds() / 1000
        let verdict = replays.withLock {
            $0.admit(installationID: installation.id, nonce: signature.nonce, timestamp: signature.timestamp, nowSeconds: now)
        }
        switch verdict {
        case .fresh:
            return installation
        case .stale(let skew):
            let window = replays.withLock { $0.windowSeconds }
            throw .authenticationFailed("The request's timestamp is \(abs(skew)) s \(skew < 0 ? "behind" : "ahead of") the relay's clock "
                                        + "(at most \(window) s are accepted); check the server's clock.")
        case .replayed:
            throw .authenticationFailed("This request's nonce was already used (a replay); sign each request anew.")
        }
    }

    /// No answer from APNs: 503 with the failure's kind (the operator's server retries); a request APNs
    /// cannot take: 400.
    static func relayError(for error: APNsClientError, logger: Logger, installation: String) -> RelayError {
        switch error {
        case .connection(let failure):
            logger.warning("APNs did not answer", ["installation": installation, "failure": failure.description])
            return RelayError(.serviceUnavailable, "TRY_AGAIN_LATER", "APNs did not answer the relay (\(failure.kind.rawValue)).",
                              retryAfter: 1, apnsFailure: failure.kind.rawValue)
        case .invalidRequest(let reason):
            return .badRequest("The push cannot be sent: \(reason).")
        case .signing(let reason):
            logger.error("cannot sign the APNs provider token", ["error": reason])
            return RelayError(.internalServerError, "INTERNAL_ERROR", "The relay cannot sign its APNs provider token.")
        case .shutDown:
            return RelayError(.serviceUnavailable, "TRY_AGAIN_LATER", "The relay is shutting down.", retryAfter: 1)
        }
    }
}
