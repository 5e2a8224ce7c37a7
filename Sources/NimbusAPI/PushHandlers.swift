import Foundation
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// `tokens/register` and `tokens/unregister` (docs/api.md "Push to sleeping devices"): a device's
/// APNs token for this container and environment. With push off both check their input and answer
/// `"push": "off"`, storing nothing.
struct PushHandlers: Sendable {
    let registrations: PushRegistrationStore
    let settings: PushSettings

    func register(_ context: DatabaseRoutes.Context, _ request: RegisterPushRequest) async throws -> HTTPResponse? {
        let registration = request.registration
        if settings.isOn {
            let container = context.session.container
            guard settings.topics[container] != nil else {
                throw SyncError(.badRequest, "Push is not configured for container \(Names.quoted(container)): "
                    + "the operator has given it no APNs topic (--apns-topics).")
            }
            try await registrations.on(context.execution).register(context.session, registration)
        }
        return Wire.json(.object([
            "apnsEnvironment": .string(registration.apnsEnvironment.rawValue),
            "apnsToken": .string(registration.apnsToken),
            "push": .string(settings.mode.rawValue),
        ]))
    }

    func unregister(_ context: DatabaseRoutes.Context) async throws -> HTTPResponse? {
        // A registration left from when push was on is removed all the same: that is the
        // device's wish, and nothing is stored.
        let removed = try await registrations.on(context.execution).unregister(context.session)
        var answer: JSONObject = ["unregistered": .bool(removed)]
        if !settings.isOn { answer["push"] = .string(PushSettings.Mode.off.rawValue) }
        return Wire.json(.object(answer))
    }
}

/// The body of `tokens/register`, checked once (request-level BAD_REQUEST saying which member).
struct RegisterPushRequest: JSONBodyRequest {
    var registration: PushRegistrationRequest

    init(body: JSONValue, limits: Limits) throws {
        registration = try PushRegistrationRequest(body: body)
    }
}
