import Foundation

/// Which of Apple's push hosts a device token belongs to: a development build's token works only
/// with the sandbox (`development`), an App Store or TestFlight build's only with `production`.
public enum APNsEnvironment: String, Sendable, Hashable, Codable {
    case development, production
}

/// How the server forwards notifications to APNs (`tokens/register`'s `push`). An open set: a
/// newer server may answer a mode this client does not know.
public struct PushMode: RawRepresentable, Sendable, Hashable {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The server holds the APNs key and sends itself.
    public static let direct = PushMode(rawValue: "direct")
    /// The server sends through the app publisher's relay.
    public static let relay = PushMode(rawValue: "relay")
    /// The operator has not configured push: nothing was stored; use live mode and the
    /// `BGAppRefreshTask` recipe (docs/client.md "iOS, honestly").
    public static let off = PushMode(rawValue: "off")
}

/// The server's answer to `registerForPush`.
public struct PushRegistration: Sendable, Hashable {
    public var apnsEnvironment: APNsEnvironment
    /// The APNs device token as lower-case hex, as the server stored it.
    public var apnsToken: String
    public var push: PushMode
    /// False when the server has push off: the token was checked but not stored, and no push
    /// will come (not an error: the app falls back to live mode and background refresh).
    public var isActive: Bool { push != .off }
}

/// One push registration of a device, as `GET /devices` lists it.
public struct PushRegistrationState: Sendable, Hashable {
    public var container: String
    public var environment: String
    public var apnsEnvironment: APNsEnvironment?
    public var registeredAt: Date
    public var lastAttemptAt: Date?
    /// The HTTP status of APNs' last answer for this device.
    public var lastStatus: Int?
    public var lastReason: String?

    static func fromWire(_ object: JSONObject) throws -> PushRegistrationState {
        guard let container = JSON.string(object["container"]), let environment = JSON.string(object["environment"]),
              let registered = JSON.int64(object["registeredAt"]) else {
            throw JSON.bad("A push registration of GET /devices has no container, environment or registeredAt")
        }
        return PushRegistrationState(
            container: container, environment: environment,
            apnsEnvironment: JSON.string(object["apnsEnvironment"]).flatMap(APNsEnvironment.init(rawValue:)),
            registeredAt: WireTime.date(milliseconds: registered),
            lastAttemptAt: JSON.int64(object["lastAttemptAt"]).map { WireTime.date(milliseconds: $0) },
            lastStatus: JSON.int64(object["lastStatus"]).map { Int($0) }, lastReason: JSON.string(object["lastReason"]))
    }
}

extension Data {
    /// The bytes as lower-case hex: how APNs device tokens travel (`tokens/register`).
    public var nimbusHexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(count * 2)
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

extension Database {
    /// Registers this device's APNs token (`tokens/register`) for this container and environment,
    /// replacing an earlier one. Call it from
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)` on every launch (tokens
    /// change). A server with push off answers `push == .off` (not an error); a malformed token or
    /// a container the operator gave no APNs topic is `invalidArguments` with the server's reason.
    public func registerForPush(apnsToken: Data, environment: APNsEnvironment) async throws -> PushRegistration {
        let body: JSONObject = ["apnsToken": .string(apnsToken.nimbusHexString), "apnsEnvironment": .string(environment.rawValue)]
        let answer = try await transport.post(url("tokens/register"), body: body)
        guard let mode = JSON.string(answer["push"]) else { throw JSON.bad("tokens/register answered without push") }
        return PushRegistration(
            apnsEnvironment: JSON.string(answer["apnsEnvironment"]).flatMap(APNsEnvironment.init(rawValue:)) ?? environment,
            apnsToken: JSON.string(answer["apnsToken"]) ?? apnsToken.nimbusHexString, push: PushMode(rawValue: mode))
    }

    /// Removes this device's push registration in this container and environment
    /// (`tokens/unregister`); true when there was one.
    @discardableResult
    public func unregisterForPush() async throws -> Bool {
        let answer = try await transport.post(url("tokens/unregister"), body: [:])
        return JSON.bool(answer["unregistered"]) ?? false
    }
}
