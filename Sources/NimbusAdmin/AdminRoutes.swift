import Foundation
import NimbusAPI
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// `/api/...` of the admin listener: JSON in the docs/api.md error shape, an admin token on every
/// request, and every mutation written to the audit trail in its own transaction.
struct AdminRoutes: Sendable {
    let store: Store
    let limits: Limits
    let metrics: Metrics
    let facts: AdminConsole.ServerFacts
    let pruneJob: ConsolePruneJob
    private let logger = Logger(subsystem: "admin")

    /// How many audit entries and requests a page shows at most.
    static let maxListed = 500

    func register(in router: inout HTTPRouter) {
        get(&router, "/api/overview") { _, _ in try await overview() }
        get(&router, "/api/users") { _, _ in try await users() }
        get(&router, "/api/users/:user/devices") { request, _ in try await devices(user: request.pathParameters["user"] ?? "") }
        post(&router, "/api/users/:user/pair") { request, admin in try await pair(request, admin: admin) }
        post(&router, "/api/users/:user/tokens") { request, admin in try await issue(request, admin: admin) }
        post(&router, "/api/devices/revoke") { request, admin in try await revoke(request, admin: admin) }
        get(&router, "/api/audit") { request, _ in try await audit(request) }
        get(&router, "/api/requests") { request, _ in try requests(request) }
        get(&router, "/api/configuration") { _, _ in try await configuration() }
        registerData(in: &router)
        registerOperations(in: &router)
        registerPush(in: &router)
    }

    typealias Body = @Sendable (HTTPRequest, AdminIdentity) async throws -> JSONValue

    func get(_ router: inout HTTPRouter, _ pattern: String, _ body: @escaping Body) {
        router.add("GET", pattern, handler(body))
    }

    func post(_ router: inout HTTPRouter, _ pattern: String, _ body: @escaping Body) {
        router.add("POST", pattern, handler(body))
    }

    /// A GET route that answers with a response of its own (not JSON): downloads.
    func getResponse(_ router: inout HTTPRouter, _ pattern: String,
                     _ body: @escaping @Sendable (HTTPRequest, AdminIdentity) async throws -> HTTPResponse) {
        router.add("GET", pattern, responding(body))
    }

    /// Authenticates the admin token, runs the route, answers JSON or the error shape.
    private func handler(_ body: @escaping Body) -> HTTPServer.Handler {
        responding { request, identity in
            HTTPResponse(status: .ok, contentType: "application/json; charset=utf-8", body: try await body(request, identity).serialized())
        }
    }

    /// Authenticates the admin token, runs the route, answers its response or the error shape,
    /// either with the console's security headers.
    private func responding(_ body: @escaping @Sendable (HTTPRequest, AdminIdentity) async throws -> HTTPResponse) -> HTTPServer.Handler {
        let admin = store.admin, logger = logger
        return { request, writer in
            Task {
                do {
                    let digest = try RequestInput.bearerDigest(request.headers["Authorization"], credential: "admin token",
                                                                 hint: " (nimbus admin token issue NAME)")
                    guard let identity = try await admin.identity(tokenDigest: digest) else {
                        throw SyncError(.authenticationFailed, "The admin token is unknown or revoked (device tokens are not admin tokens).")
                    }
                    writer.respond(AdminConsole.secured(try await body(request, identity)))
                } catch {
                    writer.respond(AdminConsole.secured(ErrorResponse.make(for: error, logger: logger)))
                }
            }
        }
    }

    static func milliseconds(_ date: Date?) -> JSONValue {
        date.map { .integer(Int64(($0.timeIntervalSince1970 * 1000).rounded())) } ?? .null
    }

    // MARK: - Routes

    private func overview() async throws -> JSONValue {
        // Bounded: the overview answers while the database is unreachable (a failover).
        let store = store
        let probe = (try? await valueWithin(seconds: 2, { try await store.probe() })) ?? nil
        let pool = store.poolStatistics
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        // Error answers of the last hour by serverErrorCode, from the requests the ring still holds.
        var errors: [String: Int] = [:]
        for entry in metrics.recentRequests.newestFirst where entry.at > now - 3_600_000 {
            if let code = entry.serverErrorCode { errors[code, default: 0] += 1 }
        }
        let minutes: [JSONValue] = metrics.recentRequests.perMinute(now: now).map { minute in
            let counts = JSONObject(minute.countsByStatus.sorted { $0.key < $1.key }.map { (String($0.key), .integer(Int64($0.value))) })
            return .object(["minute": .integer(minute.minute * 60_000), "countsByStatus": .object(counts)])
        }
        return .object([
            "version": .string(facts.version),
            "startedAt": Self.milliseconds(facts.startedAt),
            "uptimeSeconds": .integer(Int64(Date().timeIntervalSince(facts.startedAt))),
            "database": .object(["reachable": .bool(probe != nil), "roundTripMs": probe.map { .double(($0.seconds * 1e6).rounded() / 1e3) } ?? .null,
                                 "host": probe.map { .string($0.host) } ?? .null, "role": probe.map { .string($0.role) } ?? .null]),
            "pool": .object(["inUse": .integer(Int64(pool.inUse)), "idle": .integer(Int64(pool.idle)), "max": .integer(Int64(pool.max)),
                             "waiting": .integer(Int64(pool.waiting))]),
            "parkedWaiters": .integer(Int64(store.hub.count)),
            "requestsPerMinute": .array(minutes),
            "errorsByCode": .object(JSONObject(errors.sorted { $0.key < $1.key }.map { ($0.key, .integer(Int64($0.value))) })),
            "lastPrune": try await store.admin.lastPrune().map { run in
                .object(["at": Self.milliseconds(run.finishedAt), "recordsDeleted": .integer(run.records), "tombstonesDeleted": .integer(run.tombstones),
                         "assetsDeleted": .integer(run.assets), "notificationsDeleted": .integer(run.notifications), "seconds": .double(run.seconds)])
            } ?? .null,
            "nextPruneAt": Self.milliseconds(facts.pruneSchedule.nextAt),
        ])
    }

    private func users() async throws -> JSONValue {
        .object(["users": .array(try await store.accounts.listUsers().map { user in
            .object(["name": .string(user.name), "userRecordName": .string(user.userRecordName),
                     "createdAt": Self.milliseconds(user.createdAt), "activeTokens": .integer(Int64(user.activeTokens))])
        })])
    }

    private func devices(user: String) async throws -> JSONValue {
        let waiting = store.hub.waitingDeviceKeys
        let userID = try await store.devices.user(named: user)
        let positions = Dictionary(grouping: try await store.admin.syncPositions(user: user), by: \.tokenID)
        return .object(["user": .string(user), "maxCountedLag": .integer(Int64(AdminStore.maxCountedLag)),
                        "devices": .array(try await store.accounts.listTokens(user: user).map { token in
            .object(["tokenID": .string(token.tokenID), "deviceName": .string(token.deviceName),
                     "createdAt": Self.milliseconds(token.createdAt), "lastUsedAt": Self.milliseconds(token.lastUsedAt),
                     "revokedAt": Self.milliseconds(token.revokedAt),
                     "waiting": .bool(token.revokedAt == nil && waiting.contains("\(userID)/\(token.deviceName)")),
                     "zones": .array((positions[token.tokenID] ?? []).map { position in
                         .object(["container": .string(position.container), "environment": .string(position.environment),
                                  "zoneName": .string(position.zoneName), "lastSyncAt": Self.milliseconds(position.syncedAt),
                                  "lag": .integer(Int64(position.lag))])
                     })])
        })])
    }

    private func pair(_ request: HTTPRequest, admin: AdminIdentity) async throws -> JSONValue {
        let user = request.pathParameters["user"] ?? ""
        let body = try RequestInput.parseBody(request.body)
        var hint: String?
        if let value = body["deviceName"], !value.isNull {
            guard case .string(let name) = value else { throw SyncError(.badRequest, "deviceName must be a string.") }
            if let problem = DeviceName.problem(name, field: "deviceName") { throw SyncError(.badRequest, problem) }
            hint = name
        }
        let issued = try await store.admin.pair(user: user, deviceNameHint: hint, limits: limits, by: admin)
        let url = PairingURL.make(server: facts.publicURL, code: issued.code)
        return .object(["code": .string(issued.code.display), "expiresAt": .integer(issued.expiresAt), "pairingURL": .string(url),
                        "qrSVG": .string(try QRCode(text: url).svg())])
    }

    /// `{"deviceName"}`: a device token issued at once, like `nimbus token issue USER --device NAME`;
    /// the secret is in this answer only.
    private func issue(_ request: HTTPRequest, admin: AdminIdentity) async throws -> JSONValue {
        let user = request.pathParameters["user"] ?? ""
        guard case .string(let name)? = try RequestInput.parseBody(request.body)["deviceName"] else {
            throw SyncError(.badRequest, "The body must be {\"deviceName\": \"...\"} naming the new device.")
        }
        let issued = try await store.admin.issueDeviceToken(user: user, deviceName: name, by: admin)
        return .object(["tokenID": .string(issued.tokenID), "token": .string(issued.secret), "deviceName": .string(name)])
    }

    private func revoke(_ request: HTTPRequest, admin: AdminIdentity) async throws -> JSONValue {
        guard case .string(let tokenID)? = try RequestInput.parseBody(request.body)["tokenID"], tokenID.hasPrefix("tok_"), tokenID.count <= 64 else {
            throw SyncError(.badRequest, "The body must be {\"tokenID\": \"tok_...\"} naming a device token.")
        }
        try await store.admin.revokeDeviceToken(tokenID: tokenID, by: admin)
        return .object(["tokenID": .string(tokenID), "revoked": .bool(true)])
    }

    private func audit(_ request: HTTPRequest) async throws -> JSONValue {
        let limit = try Self.limit(request)
        return .object(["entries": .array(try await store.admin.auditTrail(limit: limit).map { entry in
            .object(["at": Self.milliseconds(entry.at), "tokenID": .string(entry.tokenID), "adminName": .string(entry.adminName),
                     "action": .string(entry.action), "target": .string(entry.target),
                     "detail": (try? JSONValue.parse(Array(entry.detail.utf8))) ?? .object([:])])
        })])
    }

    private func requests(_ request: HTTPRequest) throws -> JSONValue {
        let limit = try Self.limit(request)
        var status: Int?
        if let text = request.queryParameter("status"), !text.isEmpty {
            guard let code = Int(text), (100...599).contains(code) else { throw SyncError(.badRequest, "status must be an HTTP status from 100 to 599.") }
            status = code
        }
        let route = request.queryParameter("route").flatMap { $0.isEmpty ? nil : $0 }
        let user = request.queryParameter("user").flatMap { $0.isEmpty ? nil : $0 }
        let ring = metrics.recentRequests
        let entries = ring.newestFirst.lazy.filter { entry in
            (status == nil || entry.status == status) && (route == nil || entry.route.contains(route ?? ""))
                && (user == nil || entry.user == user)
        }.prefix(limit)
        return .object(["capacity": .integer(Int64(ring.capacity)), "requests": .array(entries.map { entry in
            .object(["at": .integer(entry.at), "method": .string(entry.method), "route": .string(entry.route),
                     "status": .integer(Int64(entry.status)), "milliseconds": .double((entry.milliseconds * 1000).rounded() / 1000),
                     "user": entry.user.map(JSONValue.string) ?? .null, "device": entry.device.map(JSONValue.string) ?? .null,
                     "serverErrorCode": entry.serverErrorCode.map(JSONValue.string) ?? .null, "client": .string(entry.client)])
        })])
    }

    private func configuration() async throws -> JSONValue {
        .object([
            "version": .string(facts.version),
            "options": .object(JSONObject(facts.options.map { ($0.name, .string($0.value)) })),
            "limits": .object(JSONObject(limits.namedValues.map { ($0.name, .integer(Int64($0.value))) })),
            "migrations": .array(try await store.appliedMigrations().map { .object(["version": .integer($0.version), "name": .string($0.name)]) }),
        ])
    }

    /// `?limit=`: 1 to `maximum`, default `default`.
    static func limit(_ request: HTTPRequest, default: Int = 100, maximum: Int = maxListed) throws -> Int {
        guard let text = request.queryParameter("limit"), !text.isEmpty else { return `default` }
        guard let limit = Int(text), (1...maximum).contains(limit) else {
            throw SyncError(.badRequest, "limit must be a whole number from 1 to \(maximum).")
        }
        return limit
    }
}
