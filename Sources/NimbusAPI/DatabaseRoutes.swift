import Foundation
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// `/database/1/{container}/{environment}/{database}/{group}/{operation}`: checks the address and
/// the bearer token, parses the JSON body, and hands the request to the operation's handler.
struct DatabaseRoutes: Sendable {
    let store: Store
    let limits: Limits
    let publicURL: String?

    /// An authenticated request with its parsed body.
    struct Context: Sendable {
        var session: Session
        /// The SHA-256 of the request's bearer token.
        var tokenDigest: [UInt8]
        /// False when `session` was taken from this instance's cache without asking the database
        /// (records/modify only): the store checks the token inside its write.
        var sessionIsVerified: Bool
        var body: JSONValue
        var request: HTTPRequest
        /// For operations that park: they answer through it and return nil.
        var answering: API.Answering
        /// Base of absolute URLs in answers: `--public-url`, else from the request's Host.
        var baseURL: String

        /// A record as answered: download URLs filled in for its assets.
        func render(_ record: Record, desiredKeys: Set<String>?, store: Store) -> JSONValue {
            renderer(store: store).render(record, desiredKeys: desiredKeys)
        }

        /// What rendering needs, without the request (parked long-polls keep only this).
        func renderer(store: Store) -> RecordRenderer {
            RecordRenderer(store: store, baseURL: baseURL, databaseID: session.databaseID)
        }
    }

    /// Renders records with absolute download URLs for their assets.
    struct RecordRenderer: Sendable {
        let store: Store
        let baseURL: String
        let databaseID: Int64

        func render(_ record: Record, desiredKeys: Set<String>?) -> JSONValue {
            let base = baseURL, databaseID = databaseID, store = store
            return record.withDownloadURLs { asset in
                base + store.downloadPath(databaseID: databaseID, fileChecksum: asset.fileChecksum, size: asset.size)
            }.json(desiredKeys: desiredKeys)
        }
    }

    /// An operation's answer, or nil when it answers through `context.answering` (long-polls).
    typealias Operation = @Sendable (Context) async throws -> HTTPResponse?

    static let pattern = "/database/1/:container/:environment/:database/:group/:operation"

    /// Registers the operations under one pattern; returns each operation's name and method.
    @discardableResult
    func register(in router: inout HTTPRouter, api: API.RouteBuilder) -> [(name: String, method: String)] {
        let records = RecordHandlers(store: store, limits: limits)
        let zones = ZoneHandlers(store: store, limits: limits)
        let subscriptions = SubscriptionHandlers(store: store, limits: limits, publicURL: publicURL)
        let operations: [String: (method: String, run: Operation)] = [
            "records/modify": ("POST", records.modify),
            "records/lookup": ("POST", records.lookup),
            "records/query": ("POST", records.query),
            "records/changes": ("POST", records.changes),
            "zones/list": ("GET", zones.list),
            "zones/lookup": ("POST", zones.lookup),
            "zones/modify": ("POST", zones.modify),
            "zones/changes": ("POST", zones.changes),
            "users/current": ("GET", zones.currentUser),
            "subscriptions/list": ("GET", subscriptions.list),
            "subscriptions/lookup": ("POST", subscriptions.lookup),
            "subscriptions/modify": ("POST", subscriptions.modify),
            "tokens/create": ("POST", subscriptions.createToken),
            "assets/upload": ("POST", { [store, limits] context in try await AssetRoutes.requestUploads(context, store: store, limits: limits) }),
        ]
        let store = store, limits = limits, publicURL = publicURL
        let handler = api.streaming(Self.pattern) { request, answering in
            try await Self.handle(request, answering: answering, operations: operations, store: store, limits: limits, publicURL: publicURL)
        }
        router.add("GET", Self.pattern, handler)
        router.add("POST", Self.pattern, handler)
        return operations.map { ($0.key, $0.value.method) }.sorted { $0.name < $1.name }
    }

    private static func handle(_ request: HTTPRequest, answering: API.Answering, operations: [String: (method: String, run: Operation)],
                               store: Store, limits: Limits, publicURL: String?) async throws -> HTTPResponse? {
        let parameters = request.pathParameters
        let container = parameters["container"] ?? ""
        guard Names.isValidContainer(container) else {
            throw SyncError(.badRequest, "Container \(Names.quoted(container)) is invalid: use letters, digits, '.', '-', '_' (at most 255).")
        }
        guard let environment = Environment(rawValue: parameters["environment"] ?? "") else {
            throw SyncError(.badRequest, "Unknown environment \(Names.quoted(parameters["environment"] ?? "")); use development or production.")
        }
        switch parameters["database"] ?? "" {
        case "private": break
        case "public", "shared":
            throw SyncError(.badRequest, "The \(parameters["database"] ?? "") database is not available yet; use private.")
        default:
            throw SyncError(.badRequest, "Unknown database \(Names.quoted(parameters["database"] ?? "")); use private.")
        }
        let name = "\(parameters["group"] ?? "")/\(parameters["operation"] ?? "")"
        guard let operation = operations[name] else {
            throw SyncError(.badRequest, "Unknown operation \(Names.quoted(name)).")
        }
        let method = request.method == "HEAD" ? "GET" : request.method
        guard method == operation.method else {
            var response = ErrorResponse.make(SyncError(.badRequest, "\(name) takes \(operation.method), not \(request.method)."))
            response.status = .methodNotAllowed
            response.headers.add(name: "Allow", value: operation.method == "GET" ? "GET, HEAD" : operation.method)
            return response
        }
        let digest = try bearerDigest(request.headers["Authorization"])
        let baseURL = (publicURL ?? "http://\(request.authority ?? "127.0.0.1")").trimmingSuffix("/")
        // records/modify and records/changes may start from a cached session: their statements
        // check the token themselves. Every other operation checks it here first, and so does
        // every failure of those two.
        if name == "records/modify" || name == "records/changes", let cached = store.cachedSession(tokenDigest: digest, container: container, environment: environment) {
            do {
                let body = try parseBody(request.body)
                return try await operation.run(Context(session: cached, tokenDigest: digest, sessionIsVerified: false, body: body,
                                                       request: request, answering: answering, baseURL: baseURL))
            } catch {
                guard try await store.session(tokenDigest: digest, container: container, environment: environment) != nil else {
                    throw SyncError(.authenticationFailed, "The bearer token is unknown or revoked.")
                }
                throw error
            }
        }
        guard let session = try await store.session(tokenDigest: digest, container: container, environment: environment) else {
            throw SyncError(.authenticationFailed, "The bearer token is unknown or revoked.")
        }
        let body = operation.method == "POST" ? try parseBody(request.body) : JSONValue.object([:])
        return try await operation.run(Context(session: session, tokenDigest: digest, sessionIsVerified: true, body: body,
                                               request: request, answering: answering, baseURL: baseURL))
    }

    /// `Authorization: Bearer <token>` → the token's SHA-256.
    static func bearerDigest(_ header: String?) throws -> [UInt8] {
        guard let header else {
            throw SyncError(.authenticationRequired, "This request needs an Authorization: Bearer <token> header.")
        }
        let parts = header.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
            throw SyncError(.authenticationFailed, "The Authorization header must be \"Bearer <token>\".")
        }
        return Store.tokenDigest(String(parts[1]))
    }

    static func parseBody(_ bytes: [UInt8]) throws -> JSONValue {
        if bytes.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 10 || $0 == 13 }) { return .object([:]) }
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw SyncError(.badRequest, "The body is not valid JSON: \(error.description)")
        }
        guard case .object = value else { throw SyncError(.badRequest, "The body must be a JSON object.") }
        return value
    }
}

/// Shared pieces of the wire format.
enum Wire {
    static func json(_ value: JSONValue, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json; charset=utf-8", body: value.serialized())
    }

    /// `{"zoneID": {"zoneName": ...}}` of a request, `_defaultZone` when absent.
    static func zoneName(_ body: JSONValue, required: Bool = false) throws -> String {
        guard let zone = body["zoneID"], !zone.isNull else {
            if required { throw SyncError(.badRequest, "This operation needs zoneID.") }
            return Names.defaultZone
        }
        guard case .string(let name)? = zone["zoneName"] else { throw SyncError(.badRequest, "zoneID must be {\"zoneName\": \"...\"}.") }
        guard Names.isValidZoneName(name) else {
            throw SyncError(.badRequest, "Zone name \(Names.quoted(name)) is invalid: use 1–255 letters, digits, '-', '_', '.', ':'.")
        }
        return name
    }

    static func zoneID(_ name: String) -> JSONValue { .object(["zoneName": .string(name)]) }

    /// An error item: the request-level error fields plus what it is about.
    static func item(_ error: ItemError, desiredKeys: Set<String>? = nil, extra: JSONObject = [:],
                     render: ((Record, Set<String>?) -> JSONValue)? = nil) -> JSONValue {
        var object = extra
        if let name = error.recordName { object["recordName"] = .string(name) }
        object["uuid"] = .string(UUID().uuidString.lowercased())
        object["serverErrorCode"] = .string(error.code.name)
        object["reason"] = .string(error.reason)
        if let record = error.serverRecord { object["serverRecord"] = render?(record, desiredKeys) ?? record.json(desiredKeys: desiredKeys) }
        return .object(object)
    }

    /// `wait`: absent, or a whole number of seconds from 0 to the limit.
    static func waitSeconds(_ body: JSONValue, limits: Limits) throws -> Int {
        guard let value = body["wait"], !value.isNull else { return 0 }
        guard case .integer(let seconds) = value, seconds >= 0, seconds <= Int64(limits.maxWaitSeconds) else {
            throw SyncError(.badRequest, "wait must be a whole number of seconds from 0 to \(limits.maxWaitSeconds).")
        }
        return Int(seconds)
    }

    static func syncToken(_ body: JSONValue) throws -> String? {
        guard let value = body["syncToken"], !value.isNull else { return nil }
        guard case .string(let text) = value, !text.isEmpty else { throw SyncError(.badRequest, "syncToken must be a string.") }
        return text
    }
}
