import Foundation

/// A pairing code this device asked for, to show to the new device (as text and as a QR code of
/// `pairingURL`). An app that must hand the new device a secret (an encryption key) adds it as the
/// URL's fragment (`#k=...`) in the QR it draws: fragments never reach the server.
public struct PairingInvitation: Sendable, Hashable {
    /// `ABCD-EFGH-JK`: what a person types.
    public var code: String
    public var expiresAt: Date
    /// `nimbus://pair?server=...&code=...`
    public var pairingURL: URL
}

/// One of the user's devices (a live token), as `devices()` lists them.
public struct DeviceInfo: Sendable, Hashable {
    public var tokenID: String
    public var deviceName: String
    public var createdAt: Date
    public var lastUsedAt: Date?
    /// The device this container's token belongs to.
    public var isCurrent: Bool
    /// Its APNs registrations (`registerForPush`) with the last outcome of each; empty when it has none.
    public var push: [PushRegistrationState] = []
}

extension Container {
    /// Asks for a single-use code with which a new device of this user enrolls itself
    /// (`POST /devices/pair`). `deviceName` is a suggestion for the new device.
    public func pairNewDevice(deviceName: String? = nil) async throws -> PairingInvitation {
        var body = JSONObject()
        if let deviceName { body["deviceName"] = .string(deviceName) }
        let answer = try await transport.post(transport.url("/devices/pair"), body: body)
        guard let code = JSON.string(answer["code"]), let expiresAt = JSON.int64(answer["expiresAt"]),
              let text = JSON.string(answer["pairingURL"]), let url = URL(string: text) else {
            throw JSON.bad("devices/pair answered without code, expiresAt and pairingURL")
        }
        return PairingInvitation(code: code, expiresAt: Date(timeIntervalSince1970: Double(expiresAt) / 1000), pairingURL: url)
    }

    /// Enrolls this device with a pairing URL scanned from another device of the user
    /// (`POST /devices/enroll`), keeps the new token in `credentials`, and returns a container
    /// configured with it. `pairingURL` may also be a bare code when `serverURL` is given.
    public static func enroll(pairingURL: URL, deviceName: String, identifier: String,
                              environment: NimbusConfiguration.Environment = .development,
                              credentials: any CredentialStore) async throws -> Container {
        let invitation = try PairingLink(pairingURL)
        return try await enroll(code: invitation.code, serverURL: invitation.server, deviceName: deviceName,
                                identifier: identifier, environment: environment, credentials: credentials)
    }

    /// Enrolls with a code typed by a person (case, dashes and spaces do not matter).
    public static func enroll(code: String, serverURL: URL, deviceName: String, identifier: String,
                              environment: NimbusConfiguration.Environment = .development,
                              credentials: any CredentialStore) async throws -> Container {
        let anonymous = Transport(configuration: NimbusConfiguration(serverURL: serverURL, token: "", environment: environment))
        let answer = try await anonymous.post(anonymous.url("/devices/enroll"), body: ["code": .string(code), "deviceName": .string(deviceName)],
                                              authorized: false)
        guard let token = JSON.string(answer["token"]), let tokenID = JSON.string(answer["tokenID"]),
              let user = JSON.string(answer["userRecordName"]) else {
            throw JSON.bad("devices/enroll answered without token, tokenID and userRecordName")
        }
        let credential = DeviceCredential(serverURL: serverURL, token: token, tokenID: tokenID, userRecordName: user, deviceName: deviceName)
        try credentials.save(credential)
        return Container(identifier: identifier, configuration: NimbusConfiguration(serverURL: serverURL, token: token, environment: environment))
    }

    /// The user's devices (`GET /devices`), oldest first.
    public func devices() async throws -> [DeviceInfo] {
        let answer = try await transport.get(transport.url("/devices"))
        guard let items = JSON.array(answer["devices"]) else { throw JSON.bad("GET /devices answered without devices") }
        return try items.map { item in
            guard let object = JSON.object(item), let id = JSON.string(object["tokenID"]), let name = JSON.string(object["deviceName"]),
                  let created = JSON.int64(object["createdAt"]) else { throw JSON.bad("a device without tokenID, deviceName or createdAt") }
            let push = try (JSON.array(object["push"]) ?? []).map { item in
                guard let registration = JSON.object(item) else { throw JSON.bad("a push registration is not an object") }
                return try PushRegistrationState.fromWire(registration)
            }
            return DeviceInfo(tokenID: id, deviceName: name, createdAt: Date(timeIntervalSince1970: Double(created) / 1000),
                              lastUsedAt: JSON.int64(object["lastUsedAt"]).map { Date(timeIntervalSince1970: Double($0) / 1000) },
                              isCurrent: JSON.bool(object["current"]) ?? false, push: push)
        }
    }

    /// Revokes one of the user's devices (this one included: signing out). Its next request is
    /// refused with `notAuthenticated`.
    public func revokeDevice(tokenID: String) async throws {
        _ = try await transport.post(transport.url("/devices/revoke"), body: ["tokenID": .string(tokenID)])
    }
}

/// `nimbus://pair?server=<percent-encoded base URL>&code=<code>` taken apart.
struct PairingLink: Sendable, Hashable {
    var server: URL
    var code: String

    init(_ url: URL) throws {
        guard url.scheme == "nimbus", url.host == "pair",
              let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems,
              let serverText = items.first(where: { $0.name == "server" })?.value, let server = URL(string: serverText),
              server.scheme == "http" || server.scheme == "https",
              let code = items.first(where: { $0.name == "code" })?.value, !code.isEmpty else {
            throw NimbusError(.invalidArguments, reason: "Not a pairing URL: \(url.absoluteString); expected nimbus://pair?server=...&code=...")
        }
        self.server = server
        self.code = code
    }
}
