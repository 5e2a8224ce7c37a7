import Foundation
import NimbusSupport

/// The relay protocol's bodies (docs/push.md "The relay"). `POST /v1/push` carries one `APNsRequest`
/// as a JSON object; a 200 answer carries APNs' answer, error statuses included (410 and 400
/// `BadDeviceToken` say the device token is dead: the sender's retry policy reads status and reason). Relay-level errors use the CloudKit error shape.
package enum RelayWire {
    package static let pushPath = "/v1/push"
    /// The largest request body the relay reads: a 4,096-byte payload in base64url and the fields.
    package static let maxRequestBytes = 16 * 1024

    package struct DecodeError: Error, Sendable, Equatable, CustomStringConvertible {
        package var description: String
    }

    // MARK: The request

    package static func encode(_ request: APNsRequest) -> [UInt8] {
        var object: JSONObject = [
            "deviceToken": .string(request.deviceToken), "environment": .string(request.environment.rawValue),
            "topic": .string(request.topic), "pushType": .string(request.pushType.rawValue),
            "priority": .integer(Int64(request.priority.rawValue)), "apnsID": .string(request.apnsID.uuidString.lowercased()),
            "expiration": .integer(request.expiration), "payload": .string(Base64URL.encode(request.payload)),
        ]
        if let collapseID = request.collapseID { object["collapseID"] = .string(collapseID) }
        return JSONValue.object(object).serialized()
    }

    /// The request in `body`, checked as `APNsRequest.invalidReason` checks it; errors name the member.
    package static func decodeRequest(_ body: [UInt8]) throws(DecodeError) -> APNsRequest {
        guard let value = try? JSONValue.parse(body, limits: .init()), let object = value.objectValue else {
            throw DecodeError(description: "the body is not a JSON object")
        }
        for key in object.keys where !["deviceToken", "environment", "topic", "pushType", "priority", "apnsID", "expiration", "payload",
                                       "collapseID"].contains(key) {
            throw DecodeError(description: "unknown member '\(key.prefix(40))'")
        }
        func string(_ key: String) throws(DecodeError) -> String {
            guard let text = object[key]?.stringValue else { throw DecodeError(description: "'\(key)' is missing or not a string") }
            return text
        }
        guard let environment = APNsEnvironment(rawValue: try string("environment")) else {
            throw DecodeError(description: "'environment' is not development or production")
        }
        guard let pushType = APNsRequest.PushType(rawValue: try string("pushType")) else {
            throw DecodeError(description: "'pushType' is not alert or background")
        }
        guard let priorityValue = object["priority"]?.int64Value, let priority = APNsRequest.Priority(rawValue: Int(priorityValue)) else {
            throw DecodeError(description: "'priority' is not 10 or 5")
        }
        guard let apnsID = UUID(uuidString: try string("apnsID")) else { throw DecodeError(description: "'apnsID' is not a UUID") }
        guard let expiration = object["expiration"]?.int64Value, expiration >= 0 else {
            throw DecodeError(description: "'expiration' is not a non-negative whole number of seconds")
        }
        guard let payload = Base64URL.decode(try string("payload")), !payload.isEmpty else {
            throw DecodeError(description: "'payload' is not non-empty base64url")
        }
        var collapseID: String?
        if let member = object["collapseID"] {
            guard let text = member.stringValue else { throw DecodeError(description: "'collapseID' is not a string") }
            collapseID = text
        }
        let request = APNsRequest(deviceToken: try string("deviceToken"), environment: environment, topic: try string("topic"),
                                  pushType: pushType, priority: priority, apnsID: apnsID, expiration: expiration,
                                  collapseID: collapseID, payload: payload)
        if let reason = request.invalidReason { throw DecodeError(description: reason) }
        return request
    }

    // MARK: The answer

    /// APNs' answer as the relay passes it back.
    package static func encode(_ response: APNsResponse) -> [UInt8] {
        var object: JSONObject = ["status": .integer(Int64(response.status))]
        if let reason = response.reason { object["reason"] = .string(reason.rawValue) }
        if let apnsID = response.apnsID { object["apnsID"] = .string(apnsID.uuidString.lowercased()) }
        if let timestamp = response.unregisteredAt { object["timestamp"] = .integer(timestamp) }
        if let retryAfter = response.retryAfterSeconds { object["retryAfter"] = .integer(Int64(retryAfter)) }
        return JSONValue.object(object).serialized()
    }

    /// What the relay's answer means to the sender: APNs' answer (200), or why there is none as the
    /// `APNsClientError` the sender already acts on (docs/push.md "The relay", "What the client does").
    package static func decodeAnswer(status: Int, retryAfterHeader: String?, body: [UInt8]) -> Result<APNsResponse, APNsClientError> {
        let object = (try? JSONValue.parse(body, limits: .init()))?.objectValue
        let reason = object?["reason"]?.stringValue ?? "no reason given"
        switch status {
        case 200:
            guard let object, let apnsStatus = object["status"]?.int64Value, (100...599).contains(apnsStatus) else {
                return .failure(.connection(APNsConnectionFailure(kind: .other, code: 200, detail: "the relay answered 200 without APNs' answer")))
            }
            let retryAfter = object["retryAfter"]?.int64Value.flatMap { $0 >= 0 ? Int(clamping: $0) : nil }
            return .success(APNsResponse(status: Int(apnsStatus), reason: object["reason"]?.stringValue.map(APNsReason.init(rawValue:)),
                                         apnsID: object["apnsID"]?.stringValue.flatMap(UUID.init(uuidString:)),
                                         unregisteredAt: object["timestamp"]?.int64Value, retryAfterSeconds: retryAfter))
        case 429:
            // The relay's per-installation limit: retried like APNs' own 429, never sooner than it says.
            let retryAfter = retryAfterHeader.flatMap { Int($0) } ?? object?["retryAfter"]?.int64Value.map { Int(clamping: $0) }
            return .success(APNsResponse(status: 429, reason: .relayRateLimited, retryAfterSeconds: retryAfter))
        case 400, 413:
            return .failure(.invalidRequest("the relay refused the request (\(status)): \(reason)"))
        case 401:
            // A configuration fault between this server and its relay, not the device's or the push's:
            // retried (with backoff, until the push expires) so that nothing is lost while it is fixed.
            return .failure(.connection(APNsConnectionFailure(kind: .other, code: 401,
                detail: "the relay refused this server's credentials (check --push-relay-credentials): \(reason)")))
        default:
            let kind = object?["apnsFailure"]?.stringValue.flatMap(APNsConnectionFailure.Kind.init(rawValue:)) ?? .other
            return .failure(.connection(APNsConnectionFailure(kind: kind, code: status, detail: "the relay answered \(status): \(reason)")))
        }
    }
}

extension APNsReason {
    /// Not Apple's: the relay's per-installation rate limit refused the push (HTTP 429 from the relay).
    package static let relayRateLimited: APNsReason = "RelayRateLimited"
}
