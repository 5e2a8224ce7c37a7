import Foundation
import NimbusHTTP
import NimbusSupport

/// A relay-level error in the CloudKit error shape the server uses (docs/api.md):
/// `{"uuid", "serverErrorCode", "reason", "retryAfter"?}`, plus `apnsFailure` when APNs gave no answer.
package struct RelayError: Error, Sendable, Equatable {
    package var status: HTTPStatus
    package var code: String
    package var reason: String
    package var retryAfter: Int?
    package var apnsFailure: String?

    package init(_ status: HTTPStatus, _ code: String, _ reason: String, retryAfter: Int? = nil, apnsFailure: String? = nil) {
        self.status = status
        self.code = code
        self.reason = reason
        self.retryAfter = retryAfter
        self.apnsFailure = apnsFailure
    }

    package static func badRequest(_ reason: String) -> RelayError { RelayError(.badRequest, "BAD_REQUEST", reason) }
    package static func authenticationFailed(_ reason: String) -> RelayError { RelayError(.unauthorized, "AUTHENTICATION_FAILED", reason) }

    package var response: HTTPResponse {
        var object: JSONObject = ["uuid": .string(UUID().uuidString.lowercased()), "serverErrorCode": .string(code), "reason": .string(reason)]
        var headers: HTTPHeaders = [:]
        if let retryAfter {
            object["retryAfter"] = .integer(Int64(retryAfter))
            headers.add(name: "Retry-After", value: String(retryAfter))
        }
        if let apnsFailure { object["apnsFailure"] = .string(apnsFailure) }
        if status == .unauthorized { headers.add(name: "WWW-Authenticate", value: "Nimbus-Relay-HMAC-SHA256") }
        return HTTPResponse(status: status, contentType: "application/json; charset=utf-8", body: JSONValue.object(object).serialized(sortedKeys: true),
                            headers: headers)
    }

    /// Errors the HTTP core answers itself (parse errors, 413, timeouts, 503), in the same shape.
    package static let forHTTPCore: HTTPServer.ErrorResponder = { status, reason in
        let code = switch status.code {
        case 413: "LIMIT_EXCEEDED"
        case 503: "TRY_AGAIN_LATER"
        default: "BAD_REQUEST"
        }
        return RelayError(status, code, reason, retryAfter: status.code == 503 ? 1 : nil).response
    }
}
