import Foundation
import NimbusCore
import NimbusPush
import NimbusStore

extension ClaimedPush {
    /// The payload API.md gives this push, at most `maxPayloadBytes` when it can be (`fieldsOmitted`).
    package func payload(maxPayloadBytes: Int) -> [UInt8] {
        PushPayload(kind: kind, notification: notification, container: container, environment: environment.rawValue,
                    cursor: cursor, badge: badge).bytes(maxBytes: maxPayloadBytes)
    }

    /// The APNs request for this claim: alert at priority 10, background at 5 with its zone as
    /// collapse id; the same `apns-id` on every attempt; `apns-expiration` in seconds. Nil when the
    /// stored `apns-id` is not a UUID (it always is: `PushIdentifier.apnsID`).
    package func apnsRequest(maxPayloadBytes: Int) -> APNsRequest? {
        guard let id = UUID(uuidString: apnsID) else { return nil }
        return APNsRequest(deviceToken: apnsToken, environment: apnsEnvironment == .development ? .development : .production,
                           topic: topic, pushType: kind == .alert ? .alert : .background,
                           priority: kind == .alert ? .immediate : .conservePower, apnsID: id,
                           expiration: expiresAt / 1_000, collapseID: kind == .background ? collapseKey : nil,
                           payload: payload(maxPayloadBytes: maxPayloadBytes))
    }
}

extension PushAnswer {
    /// APNs' answer as the outbox records it.
    package init(_ response: APNsResponse) {
        self.init(status: response.status, reason: response.reason?.rawValue, retryAfterSeconds: response.retryAfterSeconds)
    }

    /// What the outbox records when `send` threw: no answer (retry) for a connection failure, a
    /// signing failure or a shut-down client; a request that cannot go on the wire is given up
    /// (as APNs would refuse it), with the reason in the log.
    package init(_ error: any Error) {
        switch error as? APNsClientError {
        case .invalidRequest?: self.init(status: 400, reason: "NotSent")
        default: self.init(status: nil)
        }
    }
}
