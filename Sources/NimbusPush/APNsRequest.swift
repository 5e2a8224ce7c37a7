import Foundation

/// Apple's two APNs hosts; a registration's `apnsEnvironment` picks one.
package enum APNsEnvironment: String, Sendable, CaseIterable {
    /// `api.sandbox.push.apple.com`: apps built for development.
    case development
    /// `api.push.apple.com`: TestFlight and App Store builds.
    case production
}

/// One notification to one device: `POST /3/device/<token>` with Apple's request headers.
package struct APNsRequest: Sendable, Equatable {
    /// `apns-push-type`.
    package enum PushType: String, Sendable {
        case alert, background
    }

    /// `apns-priority`: 10 delivers at once (alerts), 5 lets iOS pick a moment (required for background).
    package enum Priority: Int, Sendable {
        case immediate = 10
        case conservePower = 5
    }

    /// The device token, hexadecimal (Apple's `deviceToken` bytes).
    package var deviceToken: String
    package var environment: APNsEnvironment
    /// `apns-topic`: the app's bundle id.
    package var topic: String
    package var pushType: PushType
    package var priority: Priority
    /// `apns-id`: the same for every attempt of one push, so APNs and its logs can tell retries.
    package var apnsID: UUID
    /// `apns-expiration`: seconds since the Unix epoch after which APNs stops trying; 0 = now or never.
    package var expiration: Int64
    /// `apns-collapse-id` (at most 64 bytes): a newer push replaces an undelivered one with the same id.
    package var collapseID: String?
    /// The JSON payload (at most 4,096 bytes; APNs answers 413 `PayloadTooLarge` beyond).
    package var payload: [UInt8]

    package init(deviceToken: String, environment: APNsEnvironment, topic: String, pushType: PushType, priority: Priority,
                 apnsID: UUID, expiration: Int64, collapseID: String? = nil, payload: [UInt8]) {
        self.deviceToken = deviceToken
        self.environment = environment
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.apnsID = apnsID
        self.expiration = expiration
        self.collapseID = collapseID
        self.payload = payload
    }

    /// Why the request cannot go on the wire as it is, or nil. The token goes into the path and the
    /// strings into headers, so only hex and visible ASCII pass (no path or header injection).
    package var invalidReason: String? {
        let token = deviceToken.utf8
        guard !token.isEmpty, token.count % 2 == 0, token.count <= 400, token.allSatisfy(Self.isHexDigit) else {
            return "the device token is not even-length hexadecimal"
        }
        guard !topic.isEmpty, topic.utf8.allSatisfy(Self.isVisibleASCII) else {
            return "the topic '\(topic)' is not a bundle id"
        }
        if let collapseID {
            guard collapseID.utf8.count <= 64, collapseID.utf8.allSatisfy(Self.isVisibleASCII) else {
                return "the collapse id is over 64 bytes or not visible ASCII"
            }
        }
        return nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    private static func isVisibleASCII(_ byte: UInt8) -> Bool {
        (0x21...0x7E).contains(byte)
    }
}
