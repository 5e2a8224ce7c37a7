import Foundation

/// The one error NimbusKit throws, with CloudKit-like codes. `serverErrorCode` and `reason` are the
/// server's own words when it answered; `retryAfter` is set for rate limits and unavailability.
public struct NimbusError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, Codable, CaseIterable {
        case serverRecordChanged        // CONFLICT (serverRecord holds the server's copy)
        case constraintViolation        // EXISTS: a create over a record with other content
        case unknownItem                // NOT_FOUND
        case zoneNotFound               // ZONE_NOT_FOUND
        case changeTokenExpired         // CHANGE_TOKEN_EXPIRED: fetch again from no token
        case requestRateLimited         // THROTTLED (retryAfter)
        case serviceUnavailable         // TRY_AGAIN_LATER (retryAfter)
        case limitExceeded              // LIMIT_EXCEEDED: split the request or shrink the record
        case quotaExceeded              // QUOTA_EXCEEDED
        case notAuthenticated           // AUTHENTICATION_REQUIRED / AUTHENTICATION_FAILED
        case permissionFailure          // ACCESS_DENIED
        case invalidArguments           // BAD_REQUEST
        case referenceViolation         // VALIDATING_REFERENCE_ERROR
        case batchRequestFailed         // ATOMIC_ERROR: another operation of an atomic request failed
        case internalError              // INTERNAL_ERROR or another 5xx
        case networkFailure             // no answer (unreachable, reset, timed out), or a 408: the body stalled
        case serverResponseBad          // an answer that is not the protocol (garbage, wrong shape)
        case assetCorrupted             // downloaded bytes do not match the asset's checksum
        case assetFileNotFound          // an asset's local file is missing
        case encryptionKeyMissing       // no account key (of that key id) on this device: pair with the key or import the phrase
        case decryptionFailed           // a sealed value or asset did not open: changed, moved, or another account's key
    }

    public var code: Code
    /// The server's `serverErrorCode`, when it answered with one.
    public var serverErrorCode: String?
    /// A sentence saying what went wrong and what to do.
    public var reason: String
    /// Seconds to wait before trying again.
    public var retryAfter: TimeInterval?
    /// For `serverRecordChanged`: the record as the server has it now.
    public var serverRecord: Record?
    /// The record, zone or subscription an item error is about.
    public var itemName: String?
    /// The HTTP status, when there was an answer.
    public var httpStatus: Int?
    /// For `decryptionFailed`: the field that did not open.
    public var fieldName: String?

    public init(_ code: Code, reason: String, serverErrorCode: String? = nil, retryAfter: TimeInterval? = nil,
                serverRecord: Record? = nil, itemName: String? = nil, httpStatus: Int? = nil) {
        self.code = code
        self.reason = reason
        self.serverErrorCode = serverErrorCode
        self.retryAfter = retryAfter
        self.serverRecord = serverRecord
        self.itemName = itemName
        self.httpStatus = httpStatus
    }

    /// True when the same request may succeed later unchanged (after `retryAfter` or a backoff).
    public var isRetryable: Bool {
        switch code {
        case .networkFailure, .serviceUnavailable, .requestRateLimited, .internalError, .serverResponseBad:
            return true
        default:
            return false
        }
    }

    /// Waits as long as the server asked (`retryAfter`, else `otherwise`), at most 30 s, before
    /// a request of the caller's own is sent again (an upload's resend, a prefetch's download).
    func waitOutRetryAfter(otherwise: TimeInterval) async throws {
        let seconds = min(retryAfter ?? otherwise, 30)
        if seconds > 0 { try await Task.sleep(nanoseconds: UInt64(seconds * 1e9)) }
    }

    /// True when the error is about one change's own input (its asset file, its size, a field
    /// the server refuses), not the request: that change fails, the rest of its batch is sent.
    public var isChangeFailure: Bool {
        switch code {
        case .assetFileNotFound, .limitExceeded, .invalidArguments:
            return true
        default:
            return false
        }
    }

    public var description: String {
        var text = "\(code.rawValue)"
        if let serverErrorCode { text += " (\(serverErrorCode))" }
        text += ": \(reason)"
        if let retryAfter { text += " (retry after \(retryAfter) s)" }
        return text
    }

    /// The code for a server's `serverErrorCode`.
    static func code(forServerCode serverCode: String, status: Int) -> Code {
        switch serverCode {
        case "CONFLICT": return .serverRecordChanged
        case "EXISTS": return .constraintViolation
        case "NOT_FOUND": return .unknownItem
        case "ZONE_NOT_FOUND": return .zoneNotFound
        case "CHANGE_TOKEN_EXPIRED": return .changeTokenExpired
        case "THROTTLED": return .requestRateLimited
        case "TRY_AGAIN_LATER": return .serviceUnavailable
        case "LIMIT_EXCEEDED": return .limitExceeded
        case "QUOTA_EXCEEDED": return .quotaExceeded
        case "AUTHENTICATION_REQUIRED", "AUTHENTICATION_FAILED": return .notAuthenticated
        case "ACCESS_DENIED": return .permissionFailure
        case "BAD_REQUEST": return .invalidArguments
        case "VALIDATING_REFERENCE_ERROR": return .referenceViolation
        case "ATOMIC_ERROR": return .batchRequestFailed
        case "INTERNAL_ERROR": return .internalError
        default: return status >= 500 ? .internalError : .invalidArguments
        }
    }
}
