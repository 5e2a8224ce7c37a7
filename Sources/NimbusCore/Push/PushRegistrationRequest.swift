import NimbusSupport

/// The body of `tokens/register` checked (docs/api.md "Push to sleeping devices"): Apple's device
/// token as even-length hex of 16–200 bytes, stored lower-case, and which APNs host serves it.
package struct PushRegistrationRequest: Sendable, Hashable {
    /// `development`: Apple's sandbox host; `production`: the production host.
    package var apnsEnvironment: Environment
    /// Lower-case hex.
    package var apnsToken: String

    package static let minTokenBytes = 16
    package static let maxTokenBytes = 200

    package init(apnsEnvironment: Environment, apnsToken: String) {
        self.apnsEnvironment = apnsEnvironment
        self.apnsToken = apnsToken
    }

    /// Decodes and checks `body`; a request-level BAD_REQUEST saying which member is wrong and how.
    package init(body: JSONValue) throws(SyncError) {
        guard let environment = body["apnsEnvironment"], !environment.isNull else {
            throw SyncError(.badRequest, "apnsEnvironment is required: development (Apple's sandbox) or production.")
        }
        guard case .string(let environmentName) = environment, let parsed = Environment(rawValue: environmentName) else {
            throw SyncError(.badRequest, "apnsEnvironment must be development or production, not \(Self.shown(environment)).")
        }
        guard let token = body["apnsToken"], !token.isNull else {
            throw SyncError(.badRequest, "apnsToken is required: the device token from registerForRemoteNotifications, in hex.")
        }
        guard case .string(let text) = token else {
            throw SyncError(.badRequest, "apnsToken must be a string of hexadecimal digits.")
        }
        guard let bytes = Hex.decode(text) else {
            throw SyncError(.badRequest, "apnsToken must be an even number of hexadecimal digits (0-9, a-f).")
        }
        guard bytes.count >= Self.minTokenBytes, bytes.count <= Self.maxTokenBytes else {
            throw SyncError(.badRequest, "apnsToken must encode \(Self.minTokenBytes) to \(Self.maxTokenBytes) bytes; it encodes \(bytes.count).")
        }
        self.init(apnsEnvironment: parsed, apnsToken: Hex.encode(bytes))
    }

    private static func shown(_ value: JSONValue) -> String {
        if case .string(let text) = value { return Names.quoted(text) }
        return value.serializedString
    }
}

/// The `apns-id` of a push: a UUID derived from the notification and the device, so every retry of
/// one push repeats it (docs/api.md "At least once"). The first 16 bytes of
/// SHA-256("nimbus-apns-id\0" notification "\0" device token id), with RFC 9562's version 8
/// (custom) and variant bits, in lower-case 8-4-4-4-12 form.
package enum PushIdentifier {
    package static func apnsID(notificationID: String, deviceTokenID: String) -> String {
        var bytes = Array(SHA256.hash("nimbus-apns-id\u{0}" + notificationID.lowercased() + "\u{0}" + deviceTokenID).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80   // RFC 9562 §5.8: version 8
        bytes[8] = (bytes[8] & 0x3F) | 0x80   // RFC 9562 §4.1: variant 10xx
        let hex = Array(Hex.encode(bytes))
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(hex[$0]) }
        return parts.joined(separator: "-")
    }
}
