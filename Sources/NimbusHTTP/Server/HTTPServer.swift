import Foundation
import Glibc
import NimbusSupport
import Synchronization

/// An HTTP/1.1 server on raw sockets: a few epoll event loops, each owning the connections it
/// accepts (SwiftNIO's shape), handing complete requests to one handler.
package final class HTTPServer: Sendable {
    package typealias Handler = @Sendable (HTTPRequest, HTTPResponseWriter) -> Void
    /// Builds the body of every error the server itself answers (parse errors, timeouts, 503 at
    /// capacity), so the HTTP core can speak the API's error shape without knowing it.
    package typealias ErrorResponder = @Sendable (HTTPStatus, String) -> HTTPResponse

    package struct Configuration: Sendable {
        package var host = "127.0.0.1"
        package var port = 8080
        package var backlog: Int32 = 1024
        package var eventLoopCount = max(ProcessInfo.processInfo.activeProcessorCount, 1)
        package var maxConnections = 10_000
        package var parserLimits = HTTPParser.Limits()
        package var headerTimeoutSeconds: Double = 10
        package var bodyTimeoutSeconds: Double = 30
        /// The whole body must arrive within `bodyTimeoutSeconds` plus one second per this many
        /// bytes received (time the handler made the client wait does not count); 0: no minimum.
        package var minBodyBytesPerSecond: Double = 1024
        package var keepAliveTimeoutSeconds: Double = 60
        package var drainTimeoutSeconds: Double = 10
        /// On shutdown, how long an idle kept-alive connection stays open for a request a proxy
        /// may already be sending on it (answered with `Connection: close`).
        package var drainIdleGraceSeconds: Double = 1
        /// After an answer that ends its connection, how long input is still read and dropped
        /// before the socket closes (`LingeringSockets`); the client's own close ends it sooner.
        package var lingerSeconds: Double = 2
        package var errorResponse: ErrorResponder = HTTPServer.plainErrorResponse
        /// For requests whose bodies should stream to the handler instead of being buffered
        /// (uploads): the largest body accepted; nil buffers the body up to `maxBodyBytes`.
        package var bodyStreamLimit: @Sendable (HTTPRequestHead) -> Int? = { _ in nil }
        /// Proxies whose forwarding headers give the client's address, scheme and host; none by default.
        package var trustedProxies = TrustedProxies()

        package init() {}
    }

    package let configuration: Configuration
    let logger = Logger(subsystem: "http")
    private let handler: Handler
    private let openConnections = Atomic<Int>(0)
    private let loops: Lock<[EventLoop]> = Lock([])
    private let listener = Atomic<Int32>(-1)

    package init(configuration: Configuration, handler: @escaping Handler) {
        self.configuration = configuration
        self.handler = handler
    }

    /// Connections currently open (for metrics).
    package var connectionCount: Int { openConnections.load(ordering: .relaxed) }

    /// Binds, starts the event loops and returns the bound address (port 0 picks a free port).
    package func start() throws -> (host: String, port: Int) {
        _ = Socket.raiseOpenFileLimit()
        let descriptor = try Socket.listen(host: configuration.host, port: configuration.port, backlog: configuration.backlog)
        listener.store(descriptor, ordering: .sequentiallyConsistent)
        let started: [EventLoop]
        do {
            started = try (0..<configuration.eventLoopCount).map { try EventLoop(index: $0, server: self) }
            for loop in started { try loop.watch(listener: descriptor) }
        } catch {
            listener.store(-1, ordering: .sequentiallyConsistent)
            close(descriptor)
            throw error
        }
        loops.withLock { $0 = started }
        for loop in started { loop.start() }
        return Socket.localAddress(descriptor) ?? (configuration.host, configuration.port)
    }

    /// Graceful shutdown: stop accepting, close idle connections, let in-flight requests finish
    /// within the drain timeout, then close whatever is left and stop the loops.
    package func shutdown() async {
        let all = loops.withLock { $0 }
        // Every loop stops watching the listening socket, then it is closed, so that new
        // connections are refused at once rather than accepted by the kernel and never served.
        for loop in all {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                loop.execute {
                    loop.beginDraining()
                    continuation.resume()
                }
            }
        }
        // Connections the kernel accepted meanwhile wait in the listen queue, their requests
        // perhaps sent: closing the listener would reset them (a proxy answers 502). They are
        // taken and served first, then the listener closes in the same step.
        if let first = all.first {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                first.execute { [self] in
                    first.acceptRemaining()
                    let descriptor = listener.exchange(-1, ordering: .sequentiallyConsistent)
                    if descriptor >= 0 { close(descriptor) }
                    continuation.resume()
                }
            }
        }
        let descriptor = listener.exchange(-1, ordering: .sequentiallyConsistent)
        if descriptor >= 0 { close(descriptor) }
        let deadline = monotonicNanoseconds() + UInt64(configuration.drainTimeoutSeconds * 1_000_000_000)
        while connectionCount > 0, monotonicNanoseconds() < deadline {
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        if connectionCount > 0 {
            logger.warning("drain timeout: closing connections still in flight", ["open": connectionCount])
        }
        for loop in all { loop.stop() }
    }

    // MARK: - For the event loops

    func handle(_ request: HTTPRequest, _ writer: HTTPResponseWriter) {
        handler(request, writer)
    }

    /// Counts a new connection unless the server is at `maxConnections`.
    func reserveConnectionSlot() -> Bool {
        let limit = configuration.maxConnections
        while true {
            let current = openConnections.load(ordering: .relaxed)
            guard current < limit else { return false }
            if openConnections.compareExchange(expected: current, desired: current + 1, ordering: .relaxed).exchanged {
                return true
            }
        }
    }

    func releaseConnectionSlot() {
        openConnections.subtract(1, ordering: .relaxed)
    }

    /// Past the connection limit: answer 503 at once and close, never queue or crash.
    func rejectOverCapacity(_ descriptor: Int32, date: String) {
        let response = configuration.errorResponse(.serviceUnavailable, "The server is at its limit of \(configuration.maxConnections) connections; try again shortly.")
        var headers = response.headers
        headers.replaceOrAdd(name: "Retry-After", value: "1")
        var bytes: [UInt8] = []
        HTTPResponseHeadEncoder.encode(.serviceUnavailable, headers, version: .http1_1, contentLength: response.body.count,
                                       keepAlive: false, date: date, into: &bytes)
        bytes.append(contentsOf: response.body)
        _ = bytes.withUnsafeBytes { Socket.send(descriptor, $0) }
        close(descriptor)
    }

    /// The default error body: `{"serverErrorCode": ..., "reason": ...}` as JSON.
    package static let plainErrorResponse: ErrorResponder = { status, reason in
        let body: JSONObject = ["serverErrorCode": .string(status.code == 413 ? "LIMIT_EXCEEDED" : "BAD_REQUEST"), "reason": .string(reason)]
        return HTTPResponse(status: status, contentType: "application/json; charset=utf-8", body: JSONValue.object(body).serialized())
    }
}
