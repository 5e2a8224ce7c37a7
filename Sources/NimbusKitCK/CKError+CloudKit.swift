import Foundation

/// CloudKit's user-info keys and error domain.
public let CKErrorDomain = "CKErrorDomain"
public let CKPartialErrorsByItemIDKey = "CKPartialErrors"
public let CKRecordChangedErrorAncestorRecordKey = "AncestorRecord"
public let CKRecordChangedErrorServerRecordKey = "ServerRecord"
public let CKRecordChangedErrorClientRecordKey = "ClientRecord"
public let CKErrorRetryAfterKey = "CKRetryAfter"
public let CKErrorUserDidResetEncryptedDataKey = "CKErrorUserDidResetEncryptedDataKey"

/// A CKError's user info, carried by a Sendable error.
final class CKErrorInfo: @unchecked Sendable {
    // Safe: immutable after init (records in it are handed out as CloudKit hands them out).
    let values: [String: Any]
    init(_ values: [String: Any]) { self.values = values }
}

extension CKError: CustomNSError {
    /// An error of this code, as apps and tests make them (`CKError(.serverRecordChanged)`).
    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        self.code = code
        info = CKErrorInfo(userInfo)
        let retryAfter = userInfo[CKErrorRetryAfterKey].flatMap { ($0 as? Double) ?? ($0 as? NSNumber)?.doubleValue }
        underlying = NimbusError(CKError.nimbusCode(code), reason: userInfo[NSLocalizedDescriptionKey] as? String ?? "\(code)",
                                 retryAfter: retryAfter)
    }

    public static var errorDomain: String { CKErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] {
        var values = info.values
        if values[NSLocalizedDescriptionKey] == nil { values[NSLocalizedDescriptionKey] = underlying.reason }
        if values[CKErrorRetryAfterKey] == nil, let retry = underlying.retryAfter { values[CKErrorRetryAfterKey] = retry }
        return values
    }

    /// For `serverRecordChanged`: the record this device tried to save.
    public var clientRecord: CKRecord? { info.values[CKRecordChangedErrorClientRecordKey] as? CKRecord }
    /// For `serverRecordChanged`: the record as this device last fetched it (the base of a merge).
    public var ancestorRecord: CKRecord? { info.values[CKRecordChangedErrorAncestorRecordKey] as? CKRecord }
    /// For `partialFailure`: each failed item's error, keyed by `CKRecord.ID`, `CKRecordZone.ID` or subscription ID.
    public var partialErrorsByItemID: [AnyHashable: any Error]? { info.values[CKPartialErrorsByItemIDKey] as? [AnyHashable: any Error] }

    public static var internalError: Code { .internalError }
    public static var partialFailure: Code { .partialFailure }
    public static var networkUnavailable: Code { .networkUnavailable }
    public static var networkFailure: Code { .networkFailure }
    public static var badContainer: Code { .badContainer }
    public static var serviceUnavailable: Code { .serviceUnavailable }
    public static var requestRateLimited: Code { .requestRateLimited }
    public static var missingEntitlement: Code { .missingEntitlement }
    public static var notAuthenticated: Code { .notAuthenticated }
    public static var permissionFailure: Code { .permissionFailure }
    public static var unknownItem: Code { .unknownItem }
    public static var invalidArguments: Code { .invalidArguments }
    public static var resultsTruncated: Code { .resultsTruncated }
    public static var serverRecordChanged: Code { .serverRecordChanged }
    public static var serverRejectedRequest: Code { .serverRejectedRequest }
    public static var assetFileNotFound: Code { .assetFileNotFound }
    public static var assetFileModified: Code { .assetFileModified }
    public static var incompatibleVersion: Code { .incompatibleVersion }
    public static var constraintViolation: Code { .constraintViolation }
    public static var operationCancelled: Code { .operationCancelled }
    public static var changeTokenExpired: Code { .changeTokenExpired }
    public static var batchRequestFailed: Code { .batchRequestFailed }
    public static var zoneBusy: Code { .zoneBusy }
    public static var badDatabase: Code { .badDatabase }
    public static var quotaExceeded: Code { .quotaExceeded }
    public static var zoneNotFound: Code { .zoneNotFound }
    public static var limitExceeded: Code { .limitExceeded }
    public static var userDeletedZone: Code { .userDeletedZone }
    public static var tooManyParticipants: Code { .tooManyParticipants }
    public static var alreadyShared: Code { .alreadyShared }
    public static var referenceViolation: Code { .referenceViolation }
    public static var managedAccountRestricted: Code { .managedAccountRestricted }
    public static var participantMayNeedVerification: Code { .participantMayNeedVerification }
    public static var serverResponseLost: Code { .serverResponseLost }
    public static var assetNotAvailable: Code { .assetNotAvailable }
    public static var accountTemporarilyUnavailable: Code { .accountTemporarilyUnavailable }

    static func nimbusCode(_ code: Code) -> NimbusError.Code {
        switch code {
        case .internalError: return .internalError
        case .networkFailure: return .networkFailure
        case .serviceUnavailable: return .serviceUnavailable
        case .requestRateLimited: return .requestRateLimited
        case .notAuthenticated: return .notAuthenticated
        case .permissionFailure: return .permissionFailure
        case .unknownItem: return .unknownItem
        case .invalidArguments: return .invalidArguments
        case .serverRecordChanged: return .serverRecordChanged
        case .assetFileNotFound: return .assetFileNotFound
        case .constraintViolation: return .constraintViolation
        case .changeTokenExpired: return .changeTokenExpired
        case .batchRequestFailed: return .batchRequestFailed
        case .quotaExceeded: return .quotaExceeded
        case .zoneNotFound: return .zoneNotFound
        case .limitExceeded: return .limitExceeded
        case .referenceViolation: return .referenceViolation
        case .networkUnavailable: return .networkFailure
        default: return .internalError
        }
    }
}

/// `catch CKError.serverRecordChanged { … }` as with CloudKit's bridged error.
public func ~= (code: CKError.Code, error: any Error) -> Bool { (error as? CKError)?.code == code }
