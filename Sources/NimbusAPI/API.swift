import Foundation
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// The routes of the service and the glue between HTTP and the store: it turns requests into
/// store calls and results or errors into responses, counting every answer in `metrics`.
package final class API: Sendable {
    package let store: Store
    package let limits: Limits
    package let metrics: Metrics
    /// Per-token request limit (`requestsPerSecondPerToken`, `requestBurstPerToken`).
    package let rateLimiter: RateLimiter
    let logger = Logger(subsystem: "api")
    private let router: HTTPRouter
    /// Every routed method and path (what the OpenAPI document must describe), without the
    /// catch-all that answers unknown database operations.
    package let routedPaths: [RoutedPath]

    /// A method and a path pattern with `:name` parameter segments.
    package struct RoutedPath: Sendable, Hashable {
        package var method: String
        package var path: String
    }

    package init(store: Store, limits: Limits, metrics: Metrics = Metrics(), publicURL: String? = nil) {
        self.store = store
        self.limits = limits
        self.metrics = metrics
        let limiter = RateLimiter(requestsPerSecond: limits.requestsPerSecondPerToken, burst: limits.requestBurstPerToken)
        rateLimiter = limiter
        let builder = RouteBuilder(metrics: metrics, limiter: limiter)
        var router = HTTPRouter()
        SystemRoutes(store: store, limits: limits, metrics: metrics).register(in: &router, api: builder)
        DatabaseRoutes(store: store, limits: limits, publicURL: publicURL).register(in: &router, api: builder)
        WebcourierRoute(notifications: store.notifications, hub: store.hub, liveTokens: store.liveTokens, limits: limits,
                        pushOutbox: store.database.push.isOn ? store.pushOutbox : nil)
            .register(in: &router, api: builder)
        AssetRoutes(assets: store.assets, limits: limits).register(in: &router, api: builder)
        DeviceRoutes(devices: store.devices, pushRegistrations: store.pushRegistrations, limits: limits, publicURL: publicURL, metrics: metrics).register(in: &router, api: builder)
        self.router = router
        routedPaths = router.routes
            .filter { $0.pattern != DatabaseRouteGroup.unknownOperationPattern }
            .map { RoutedPath(method: $0.method, path: $0.pattern) }
    }

    /// Which requests stream their bodies instead of buffering them (asset uploads).
    package var bodyStreamLimit: @Sendable (HTTPRequestHead) -> Int? { AssetRoutes.streamLimit(limits) }

    /// The handler to give the HTTP server.
    package var handler: HTTPServer.Handler {
        let router = router, metrics = metrics
        return { request, writer in
            let start = request.latencyStart
            // RFC 9110 §9.3.7: `OPTIONS *` asks about the server as a whole (the parser allows `*`
            // only with OPTIONS); the answer is the methods it serves.
            if request.path == "*" {
                var response = HTTPResponse(status: .noContent)
                response.headers.add(name: "Allow", value: router.methods.joined(separator: ", "))
                metrics.record(route: "(unrouted)", method: request.method, status: 204, start: start, request: request)
                writer.respond(response)
                return
            }
            switch router.match(method: request.method, path: request.path) {
            case .found(let route, let parameters):
                var request = request
                request.pathParameters = parameters
                route.handler(request, writer)
            case .methodNotAllowed(let allowed):
                metrics.record(route: "(unrouted)", method: request.method, status: 405, start: start, request: request)
                writer.respond(ErrorResponse.methodNotAllowed(request, allowed: allowed))
            case .notFound:
                let response = ErrorResponse.notFound(request)
                metrics.record(route: "(unrouted)", method: request.method, status: 404, start: start, request: request)
                writer.respond(response)
            }
        }
    }

    /// Wraps route bodies into server handlers that time and count their answers.
    struct RouteBuilder: Sendable {
        let metrics: Metrics
        let limiter: RateLimiter
        let logger = Logger(subsystem: "api")

        /// A route answered on the event loop thread: for cheap, non-blocking work only.
        func immediate(_ pattern: String, _ body: @escaping @Sendable (HTTPRequest) -> HTTPResponse) -> HTTPServer.Handler {
            let metrics = metrics, route = metrics.route(pattern)
            return { request, writer in
                let start = request.latencyStart
                let response = body(request)
                metrics.record(route, method: request.method, status: response.status.code, start: start, request: request)
                writer.respond(response)
            }
        }

        /// A route answered from a task (database work); thrown errors become API errors.
        func task(_ pattern: String, _ body: @escaping @Sendable (HTTPRequest) async throws -> HTTPResponse) -> HTTPServer.Handler {
            streaming(pattern) { request, _ in try await body(request) }
        }

        /// Like `task`, but the body may answer through the writer itself (long-polls) and
        /// return nil; it then calls the `Answered` callback it is given when it has answered.
        func streaming(_ pattern: String, _ body: @escaping @Sendable (HTTPRequest, Answering) async throws -> HTTPResponse?) -> HTTPServer.Handler {
            let metrics = metrics, logger = logger, limiter = limiter, route = metrics.route(pattern)
            return { request, writer in
                let start = request.latencyStart
                let bearer = Bearer(request.headers["Authorization"])
                if let refusal = Self.throttle(bearer, limiter: limiter) {
                    metrics.record(route, method: request.method, status: refusal.status.code, start: start, request: request)
                    writer.respond(refusal)
                    return
                }
                let who = RequestWho()
                // On the loop the request came in on, as `request.execution` tells every store
                // the route asks for: statements wait there (`PGPool.query`), suspending the task
                // and leaving the thread to other connections; blocking work
                // (`PGPool.withConnection`) hops to a thread that may block. A request made in
                // process runs on threads that may block.
                let answering = Answering(writer: writer, bearer: bearer, who: who) {
                    metrics.record(route, method: request.method, status: 200, start: start, who: who, request: request)
                }
                Task(executorPreference: request.loop?.taskExecutor ?? BlockingExecutor.shared) {
                    let response: HTTPResponse?
                    var code: String?
                    do {
                        response = try await body(request, answering)
                    } catch {
                        code = (error as? SyncError)?.code.name ?? "INTERNAL_ERROR"
                        response = ErrorResponse.make(for: error, logger: logger)
                    }
                    guard let response else { return }
                    metrics.record(route, method: request.method, status: response.status.code, start: start, who: who,
                                   serverErrorCode: code, request: request)
                    writer.respond(response)
                }
            }
        }

        /// THROTTLED (429 with `Retry-After`) when the request's bearer token has used up its
        /// bucket; nil to go on. Checked on the event loop before any task or database work, once
        /// per request: a long-poll or an asset stream counts once however long it lasts.
        /// Requests without a well-formed bearer token are not counted (they fail auth anyway).
        static func throttle(_ bearer: Bearer, limiter: RateLimiter) -> HTTPResponse? {
            guard limiter.isEnabled, let digest = try? bearer.digest() else { return nil }
            let decision = limiter.acquire(RateLimiter.Key(digest: digest))
            guard let seconds = decision.retryAfterSeconds else { return nil }
            return ErrorResponse.make(SyncError(.throttled, "Too many requests with this token: at most \(limiter.requestsPerSecond) per second "
                + "(bursts of \(limiter.burst)); retry in \(seconds) s.", retryAfter: seconds))
        }
    }

    /// What a streaming route answers through: the writer, and the hook that counts the answer;
    /// and the request's bearer token, parsed once.
    struct Answering: Sendable {
        let writer: HTTPResponseWriter
        let bearer: Bearer
        /// Who asked, set once the route has checked the token (for the request log).
        let who: RequestWho
        let answered: @Sendable () -> Void
    }

    /// The request's `Authorization: Bearer <token>`, parsed once: its SHA-256, or why not.
    struct Bearer: Sendable {
        private let parsed: Result<[UInt8], SyncError>

        init(_ header: String?) {
            parsed = Result { () throws(SyncError) in try RequestInput.bearerDigest(header) }
        }

        /// The token's SHA-256; throws AUTHENTICATION_REQUIRED or AUTHENTICATION_FAILED.
        func digest() throws -> [UInt8] { try parsed.get() }
    }
}

/// Who made a request, learnt once its token was checked; read when the answer is logged.
package final class RequestWho: Sendable {
    private let state = Lock<(user: String, device: String)?>(nil)

    package init() {}

    package var value: (user: String, device: String)? { state.withLock { $0 } }

    func set(user: String, device: String) {
        state.withLock { $0 = (user, device) }
    }
}

extension HTTPRequest {
    /// How a route's task runs its statements: on the loop the request came in on (where
    /// `API.RouteBuilder` starts the task), else on threads that may block. Stores are asked for
    /// `.on(request.execution)`.
    var execution: Execution { loop.map { .onLoop($0) } ?? .blocking }
}
