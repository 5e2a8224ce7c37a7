import Foundation
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// Declares the database operations, one route each, under
/// `/database/1/{container}/{environment}/{database}/`. Every route checks the address, takes the
/// bearer token parsed once for the request, opens the session (from this instance's cache only
/// where the route says so), parses a POST body and runs the operation.
struct DatabaseRouteGroup {
    static let prefix = "/database/1/:container/:environment/:database/"
    /// Any other `{group}/{operation}` under the prefix: BAD_REQUEST "Unknown operation" (docs/api.md).
    static let unknownOperationPattern = prefix + ":group/:operation"

    let accounts: AccountStore
    let publicURL: String?
    let limits: Limits
    let api: API.RouteBuilder
    private var routes: [(method: String, name: String, sessionMayBeCached: Bool, run: DatabaseRoutes.Operation)] = []

    init(accounts: AccountStore, publicURL: String?, limits: Limits, api: API.RouteBuilder) {
        self.accounts = accounts
        self.publicURL = publicURL
        self.limits = limits
        self.api = api
    }

    /// A POST operation whose body is decoded into `Request` once, after authentication;
    /// `sessionMayBeCached`: its statements check the token themselves, so it may start from a
    /// session this instance saw before without asking the database.
    mutating func post<Request: DatabaseRequest>(_ name: String, sessionMayBeCached: Bool = false,
                                                 _ run: @escaping @Sendable (DatabaseRoutes.Context, Request) async throws -> HTTPResponse?) {
        routes.append(("POST", name, sessionMayBeCached, Self.decoding(run)))
    }

    /// A GET operation (HEAD is served by it too); it has no body.
    mutating func get(_ name: String, _ run: @escaping @Sendable (DatabaseRoutes.Context) async throws -> HTTPResponse?) {
        routes.append(("GET", name, false, run))
    }

    private static func decoding<Request: DatabaseRequest>(
        _ run: @escaping @Sendable (DatabaseRoutes.Context, Request) async throws -> HTTPResponse?
    ) -> DatabaseRoutes.Operation {
        { context in try await run(context, Request.decode(context.request.body, limits: context.limits)) }
    }

    func register(in router: inout HTTPRouter) {
        for route in routes {
            let pattern = Self.prefix + route.name
            let accounts = accounts, publicURL = publicURL, limits = limits
            router.add(route.method, pattern, api.streaming(pattern) { request, answering in
                try await Self.handle(request, answering: answering, route: route, accounts: accounts, publicURL: publicURL, limits: limits)
            })
        }
        let unknown = api.immediate(Self.unknownOperationPattern) { request in
            let name = "\(request.pathParameters["group"] ?? "")/\(request.pathParameters["operation"] ?? "")"
            return ErrorResponse.make(SyncError(.badRequest, "Unknown operation \(Names.quoted(name))."))
        }
        router.add("GET", Self.unknownOperationPattern, unknown)
        router.add("POST", Self.unknownOperationPattern, unknown)
    }

    private static func handle(_ request: HTTPRequest, answering: API.Answering,
                               route: (method: String, name: String, sessionMayBeCached: Bool, run: DatabaseRoutes.Operation),
                               accounts: AccountStore, publicURL: String?, limits: Limits) async throws -> HTTPResponse? {
        let (container, environment) = try address(request.pathParameters)
        let accounts = accounts.on(request.execution)
        let digest = try answering.bearer.digest()
        let baseURL = Wire.baseURL(request, publicURL: publicURL)
        if route.sessionMayBeCached, let cached = accounts.cachedSession(tokenDigest: digest, container: container, environment: environment) {
            answering.who.set(user: cached.userRecordName, device: cached.deviceID)
            let proof = SessionProof.cached(tokenDigest: digest)
            do {
                return try await route.run(DatabaseRoutes.Context(session: cached, proof: proof,
                                                                  request: request, answering: answering, baseURL: baseURL, limits: limits))
            } catch {
                // Every failure of a cached session's request is checked against the database.
                _ = try await accounts.verify(cached, proof: proof)
                throw error
            }
        }
        guard let session = try await accounts.session(tokenDigest: digest, container: container, environment: environment) else {
            throw SyncError(.authenticationFailed, "The bearer token is unknown or revoked.")
        }
        answering.who.set(user: session.userRecordName, device: session.deviceID)
        return try await route.run(DatabaseRoutes.Context(session: session, proof: .verified,
                                                          request: request, answering: answering, baseURL: baseURL, limits: limits))
    }

    /// The container and environment of the path; only the private database is served.
    private static func address(_ parameters: [String: String]) throws -> (container: String, environment: Environment) {
        let container = parameters["container"] ?? ""
        guard Names.isValidContainer(container) else {
            throw SyncError(.badRequest, "Container \(Names.quoted(container)) is invalid: use letters, digits, '.', '-', '_' (at most 255).")
        }
        guard let environment = Environment(rawValue: parameters["environment"] ?? "") else {
            throw SyncError(.badRequest, "Unknown environment \(Names.quoted(parameters["environment"] ?? "")); use development or production.")
        }
        switch parameters["database"] ?? "" {
        case "private": return (container, environment)
        case "public", "shared":
            throw SyncError(.badRequest, "The \(parameters["database"] ?? "") database is not available yet; use private.")
        default:
            throw SyncError(.badRequest, "Unknown database \(Names.quoted(parameters["database"] ?? "")); use private.")
        }
    }
}
