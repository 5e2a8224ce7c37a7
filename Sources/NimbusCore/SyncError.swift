/// An error answered to a client: a CloudKit `serverErrorCode`, its HTTP status, and a sentence a
/// user can act on.
package struct SyncError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A `serverErrorCode` with its HTTP status (docs/api.md "Errors").
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        package let name: String
        package let httpStatus: Int

        package init(name: String, httpStatus: Int) {
            self.name = name
            self.httpStatus = httpStatus
        }

        package var description: String { name }

        package static let badRequest = Code(name: "BAD_REQUEST", httpStatus: 400)
        package static let authenticationRequired = Code(name: "AUTHENTICATION_REQUIRED", httpStatus: 401)
        package static let authenticationFailed = Code(name: "AUTHENTICATION_FAILED", httpStatus: 401)
        package static let accessDenied = Code(name: "ACCESS_DENIED", httpStatus: 403)
        package static let notFound = Code(name: "NOT_FOUND", httpStatus: 404)
        package static let zoneNotFound = Code(name: "ZONE_NOT_FOUND", httpStatus: 404)
        package static let conflict = Code(name: "CONFLICT", httpStatus: 409)
        package static let exists = Code(name: "EXISTS", httpStatus: 409)
        package static let changeTokenExpired = Code(name: "CHANGE_TOKEN_EXPIRED", httpStatus: 410)
        package static let limitExceeded = Code(name: "LIMIT_EXCEEDED", httpStatus: 413)
        package static let atomicError = Code(name: "ATOMIC_ERROR", httpStatus: 400)
        package static let throttled = Code(name: "THROTTLED", httpStatus: 429)
        package static let validatingReferenceError = Code(name: "VALIDATING_REFERENCE_ERROR", httpStatus: 400)
        package static let quotaExceeded = Code(name: "QUOTA_EXCEEDED", httpStatus: 413)
        package static let internalError = Code(name: "INTERNAL_ERROR", httpStatus: 500)
        package static let tryAgainLater = Code(name: "TRY_AGAIN_LATER", httpStatus: 503)
    }

    package var code: Code
    package var reason: String
    /// Seconds after which a retry may succeed (THROTTLED, TRY_AGAIN_LATER).
    package var retryAfter: Int?

    package init(_ code: Code, _ reason: String, retryAfter: Int? = nil) {
        self.code = code
        self.reason = reason
        self.retryAfter = retryAfter
    }

    package var description: String { "\(code.name): \(reason)" }
}
