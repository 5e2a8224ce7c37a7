import Foundation
import NimbusCore
import NimbusHTTP
import NimbusSupport

/// Renders errors in the docs/api.md shape: `{"uuid", "serverErrorCode", "reason", "retryAfter"?}`.
package enum ErrorResponse {
    /// The response for a request-level error; `extra` members join the error's (`/healthz`'s
    /// `status` and `database`).
    package static func make(_ error: SyncError, extra: JSONObject = [:]) -> HTTPResponse {
        var object: JSONObject = [
            "uuid": .string(UUID().uuidString.lowercased()),
            "serverErrorCode": .string(error.code.name),
            "reason": .string(error.reason),
        ]
        for (name, value) in extra { object[name] = value }
        var headers: HTTPHeaders = [:]
        if let retryAfter = error.retryAfter {
            object["retryAfter"] = .integer(Int64(retryAfter))
            headers.add(name: "Retry-After", value: String(retryAfter))
        }
        if error.code == .authenticationRequired || error.code == .authenticationFailed {
            headers.add(name: "WWW-Authenticate", value: error.code == .authenticationFailed
                ? "Bearer error=\"invalid_token\"" : "Bearer")
        }
        let status = HTTPStatus(code: error.code.httpStatus, reasonPhrase: reasonPhrase(error.code.httpStatus))
        return HTTPResponse(status: status, contentType: "application/json; charset=utf-8", body: JSONValue.object(object).serialized(sortedKeys: true), headers: headers)
    }

    /// Maps any thrown error to a response: domain errors as they are (the stores map database
    /// errors that have a domain meaning), anything else to 500 with an id that is also in the log.
    package static func make(for error: any Error, logger: Logger) -> HTTPResponse {
        if let syncError = error as? SyncError { return make(syncError) }
        let id = UUID().uuidString.lowercased()
        logger.error("internal error", ["uuid": id, "error": "\(error)"])
        var response = make(SyncError(.internalError, "The server failed to answer this request (error id \(id))."))
        let body: JSONObject = ["uuid": .string(id), "serverErrorCode": "INTERNAL_ERROR",
                                "reason": .string("The server failed to answer this request (error id \(id)).")]
        response.body = JSONValue.object(body).serialized(sortedKeys: true)
        return response
    }

    /// 405 for a path that exists with other methods, with `Allow`.
    package static func methodNotAllowed(_ request: HTTPRequest, allowed: [String]) -> HTTPResponse {
        var response = make(SyncError(.badRequest, "\(request.method) is not allowed on \(request.path); use \(allowed.joined(separator: ", ")).")
        )
        response.status = .methodNotAllowed
        response.headers.add(name: "Allow", value: allowed.joined(separator: ", "))
        return response
    }

    /// 404 for a path no route serves.
    package static func notFound(_ request: HTTPRequest) -> HTTPResponse {
        make(SyncError(.notFound, "There is nothing at \(request.path)."))
    }

    /// Errors the HTTP core answers itself (parse errors, timeouts, capacity): their code is
    /// BAD_REQUEST except 413 (LIMIT_EXCEEDED) and 503 (TRY_AGAIN_LATER).
    package static let forHTTPCore: HTTPServer.ErrorResponder = { status, reason in
        let code: SyncError.Code = switch status.code {
        case 413: .limitExceeded
        case 503: .tryAgainLater
        default: SyncError.Code(name: "BAD_REQUEST", httpStatus: status.code)
        }
        var response = make(SyncError(code, reason, retryAfter: status.code == 503 ? 1 : nil))
        response.status = status
        return response
    }

    private static func reasonPhrase(_ code: Int) -> String {
        switch code {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 413: "Content Too Large"
        case 416: "Range Not Satisfiable"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }
}
