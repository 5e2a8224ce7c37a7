import Foundation
import NimbusSupport

/// APNs' HTTP answer to one request (Apple: "Handling notification responses from APNs").
package struct APNsResponse: Sendable, Equatable {
    /// The HTTP status: 200 sent; 400, 403, 404, 405, 410, 413, 429, 500, 503 with a `reason`.
    package var status: Int
    /// The body's `reason` (`BadDeviceToken`, `Unregistered`, `ExpiredProviderToken`, …), nil on 200.
    package var reason: APNsReason?
    /// The `apns-id` APNs echoed (or assigned).
    package var apnsID: UUID?
    /// With 410: when APNs last knew the token valid (milliseconds since the epoch), from the body's `timestamp`.
    package var unregisteredAt: Int64?
    /// The `Retry-After` header in seconds, if the answer had one (delta-seconds form only).
    package var retryAfterSeconds: Int?

    package init(status: Int, reason: APNsReason? = nil, apnsID: UUID? = nil, unregisteredAt: Int64? = nil, retryAfterSeconds: Int? = nil) {
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.unregisteredAt = unregisteredAt
        self.retryAfterSeconds = retryAfterSeconds
    }

    package var isSuccess: Bool { status == 200 }

    /// The answer assembled from what the transfer received. A body that is not APNs' JSON leaves
    /// `reason` nil (a proxy's HTML error page, say); the status still says what happened.
    init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        for (name, value) in headers {
            switch name.lowercased() {
            case "apns-id": apnsID = UUID(uuidString: value)
            case "retry-after": retryAfterSeconds = Int(value).flatMap { $0 >= 0 ? $0 : nil }
            default: break
            }
        }
        if !body.isEmpty, let object = try? JSONValue.parse(body) {
            reason = object["reason"]?.stringValue.map(APNsReason.init(rawValue:))
            unregisteredAt = object["timestamp"]?.int64Value
        }
    }
}
