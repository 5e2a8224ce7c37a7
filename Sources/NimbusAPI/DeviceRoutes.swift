import Foundation
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// `/devices/pair`, `/devices/enroll`, `/devices`, `/devices/revoke` (docs/api.md "Devices"): an
/// enrolled device asks for a pairing code, a new device redeems it for a token of the same user,
/// and a user lists and revokes their own devices. Not under a container: tokens are a user's.
struct DeviceRoutes: Sendable {
    let devices: DeviceStore
    let limits: Limits
    let publicURL: String?
    let counters: DeviceCounters
    /// Failed enrollments per address and in all, counted for the whole server in the database.
    let throttle: EnrollmentThrottle

    /// Each device's push registrations (`"push"` in `GET /devices`).
    let pushRegistrations: PushRegistrationStore

    init(devices: DeviceStore, pushRegistrations: PushRegistrationStore, limits: Limits, publicURL: String?, metrics: Metrics) {
        self.devices = devices
        self.pushRegistrations = pushRegistrations
        self.limits = limits
        self.publicURL = publicURL
        counters = DeviceCounters()
        throttle = EnrollmentThrottle(perAddress: limits.enrollFailuresPerMinutePerAddress, overall: limits.enrollFailuresPerMinute)
        counters.register(in: metrics)
    }

    func register(in router: inout HTTPRouter, api: API.RouteBuilder) {
        let routes = self
        router.add("POST", "/devices/pair", api.streaming("/devices/pair") { request, answering in
            let owner = try await routes.owner(answering.bearer)
            return try await routes.pair(request, owner: owner)
        })
        router.add("POST", "/devices/enroll", api.task("/devices/enroll") { request in
            try await routes.enroll(request)
        })
        router.add("GET", "/devices", api.streaming("/devices") { _, answering in
            let owner = try await routes.owner(answering.bearer)
            return try await routes.list(owner: owner)
        })
        router.add("POST", "/devices/revoke", api.streaming("/devices/revoke") { request, answering in
            let owner = try await routes.owner(answering.bearer)
            return try await routes.revoke(request, owner: owner)
        })
    }

    /// The caller's live token and user; 401 otherwise.
    private func owner(_ bearer: API.Bearer) async throws -> TokenOwner {
        guard let owner = try await devices.owner(tokenDigest: try bearer.digest()) else {
            throw SyncError(.authenticationFailed, "The bearer token is unknown or revoked.")
        }
        return owner
    }

    private func pair(_ request: HTTPRequest, owner: TokenOwner) async throws -> HTTPResponse {
        let body = try RequestInput.parseBody(request.body)
        let hint = try DeviceRequests.deviceNameHint(body)
        let issued = try await devices.pair(userID: owner.userID, byToken: owner.tokenID, deviceNameHint: hint, limits: limits)
        counters.codesIssued.withLock { $0 += 1 }
        let server = Wire.baseURL(request, publicURL: publicURL)
        return Wire.json(.object([
            "code": .string(issued.code.display),
            "expiresAt": .integer(issued.expiresAt),
            "pairingURL": .string(PairingURL.make(server: server, code: issued.code)),
        ]))
    }

    private func enroll(_ request: HTTPRequest) async throws -> HTTPResponse {
        let body = try RequestInput.parseBody(request.body)
        let code = try DeviceRequests.code(body)
        let deviceName = try DeviceRequests.deviceName(body)
        // The attempt is counted before the code is checked (a burst cannot outrun the count) and
        // un-counted when it was no failure.
        let reservation: EnrollmentReservation
        switch try await devices.reserveEnrollment(from: request.clientAddress, throttle: throttle) {
        case .reserved(let reserved):
            reservation = reserved
        case .refused(let seconds, let scope):
            counters.throttled.withLock { $0 += 1 }
            let which = scope == .address
                ? "from this address (enrollFailuresPerMinutePerAddress is \(limits.enrollFailuresPerMinutePerAddress))"
                : "on this server (enrollFailuresPerMinute is \(limits.enrollFailuresPerMinute))"
            throw SyncError(.throttled, "Too many failed enrollments \(which); retry in \(seconds) s.", retryAfter: seconds)
        }
        let enrolled: Enrollment?
        do {
            enrolled = try await devices.enroll(code: code, deviceName: deviceName, reservation: reservation)
        } catch {
            await devices.releaseEnrollment(reservation)
            throw error
        }
        guard let enrollment = enrolled else {
            counters.failures.withLock { $0 += 1 }
            throw SyncError(.authenticationFailed, "The pairing code is wrong, expired or already used; ask the paired device for a new one.")
        }
        counters.enrollments.withLock { $0 += 1 }
        return Wire.json(.object([
            "token": .string(enrollment.token.secret),
            "tokenID": .string(enrollment.token.tokenID),
            "userRecordName": .string(enrollment.userRecordName),
            "deviceName": .string(enrollment.deviceName),
        ]))
    }

    private func list(owner: TokenOwner) async throws -> HTTPResponse {
        let devices = try await devices.devices(userID: owner.userID)
        let registrations = try await pushRegistrations.registrations(userID: owner.userID)
        return Wire.json(.object(["devices": .array(devices.map { device in
            .object([
                "tokenID": .string(device.tokenID),
                "deviceName": .string(device.deviceName),
                "createdAt": .integer(device.createdAt),
                "lastUsedAt": device.lastUsedAt.map { .integer($0) } ?? .null,
                "current": .bool(device.tokenID == owner.tokenID),
                "push": .array((registrations[device.tokenID] ?? []).map(Self.render)),
            ])
        })]))
    }

    /// A push registration as `GET /devices` shows it; the last attempt's members only when the
    /// delivery log has one.
    private static func render(_ registration: PushRegistrationSummary) -> JSONValue {
        var object: JSONObject = [
            "container": .string(registration.container),
            "environment": .string(registration.environment.rawValue),
            "apnsEnvironment": .string(registration.apnsEnvironment.rawValue),
            "registeredAt": .integer(registration.registeredAt),
        ]
        if let at = registration.lastAttemptAt { object["lastAttemptAt"] = .integer(at) }
        if let status = registration.lastStatus { object["lastStatus"] = .integer(Int64(status)) }
        if let reason = registration.lastReason { object["lastReason"] = .string(reason) }
        return .object(object)
    }

    private func revoke(_ request: HTTPRequest, owner: TokenOwner) async throws -> HTTPResponse {
        let body = try RequestInput.parseBody(request.body)
        guard case .string(let tokenID)? = body["tokenID"], !tokenID.isEmpty else {
            throw SyncError(.badRequest, "tokenID is required: the id of the device token to revoke (tok_..., from GET /devices).")
        }
        try await devices.revoke(tokenID: tokenID, userID: owner.userID)
        counters.revocations.withLock { $0 += 1 }
        return Wire.json(.object(["tokenID": .string(tokenID), "revoked": .bool(true)]))
    }
}

/// The fields of device requests, checked once.
enum DeviceRequests {
    /// `code`: a pairing code as entered (case, dashes and spaces ignored).
    static func code(_ body: JSONValue) throws -> PairingCode {
        guard let value = body["code"], !value.isNull else {
            throw SyncError(.badRequest, "code is required: the pairing code shown on the paired device.")
        }
        guard case .string(let text) = value else { throw SyncError(.badRequest, "code must be a string such as \"ABCD-EFGH-JK\".") }
        do {
            return try PairingCode(entered: text)
        } catch {
            throw SyncError(.badRequest, error.reason)
        }
    }

    /// `deviceName`, required.
    static func deviceName(_ body: JSONValue) throws -> String {
        guard let value = body["deviceName"], !value.isNull else {
            throw SyncError(.badRequest, "deviceName is required: name the new device (1–255 characters).")
        }
        guard case .string(let name) = value else { throw SyncError(.badRequest, "deviceName must be a string.") }
        if let problem = DeviceName.problem(name) { throw SyncError(.badRequest, problem) }
        return name
    }

    /// `deviceName` as a hint: nil when absent or null.
    static func deviceNameHint(_ body: JSONValue) throws -> String? {
        guard let value = body["deviceName"], !value.isNull else { return nil }
        return try deviceName(body)
    }
}

/// What `/metrics` counts about devices.
struct DeviceCounters: Sendable {
    let codesIssued = Lock(0)
    let enrollments = Lock(0)
    let failures = Lock(0)
    let throttled = Lock(0)
    let revocations = Lock(0)

    func register(in metrics: Metrics) {
        let codesIssued = codesIssued, enrollments = enrollments, failures = failures, throttled = throttled, revocations = revocations
        metrics.addCounter("nimbus_pairing_codes_issued_total", help: "Pairing codes handed out by POST /devices/pair.") {
            Double(codesIssued.withLock { $0 })
        }
        metrics.addCounter("nimbus_device_enrollments_total", help: "Devices enrolled with a pairing code.") {
            Double(enrollments.withLock { $0 })
        }
        metrics.addCounter("nimbus_device_enroll_failures_total", help: "Enrollments refused for a wrong, expired or used code.") {
            Double(failures.withLock { $0 })
        }
        metrics.addCounter("nimbus_device_enroll_throttled_total", help: "Enrollments refused because of too many failures (429).") {
            Double(throttled.withLock { $0 })
        }
        metrics.addCounter("nimbus_device_revocations_total", help: "Device tokens revoked with POST /devices/revoke.") {
            Double(revocations.withLock { $0 })
        }
    }
}
