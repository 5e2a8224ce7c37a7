import Foundation

/// CloudKit's error: a `code`, the server's copy on `serverRecordChanged`, `retryAfterSeconds`.
public struct CKError: Error, Sendable, CustomStringConvertible, LocalizedError {
    public enum Code: Int, Sendable {
        case internalError = 1, partialFailure = 2, networkUnavailable = 3, networkFailure = 4, badContainer = 5
        case serviceUnavailable = 6, requestRateLimited = 7, missingEntitlement = 8, notAuthenticated = 9
        case permissionFailure = 10, unknownItem = 11, invalidArguments = 12, resultsTruncated = 13
        case serverRecordChanged = 14, serverRejectedRequest = 15, assetFileNotFound = 16, assetFileModified = 17
        case incompatibleVersion = 18, constraintViolation = 19, operationCancelled = 20, changeTokenExpired = 21
        case batchRequestFailed = 22, zoneBusy = 23, badDatabase = 24, quotaExceeded = 25, zoneNotFound = 26
        case limitExceeded = 27, userDeletedZone = 28, tooManyParticipants = 29, alreadyShared = 30
        case referenceViolation = 31, managedAccountRestricted = 32, participantMayNeedVerification = 33
        case serverResponseLost = 34, assetNotAvailable = 35, accountTemporarilyUnavailable = 36
    }

    public let code: Code
    /// The NimbusKit error this came from.
    public let underlying: NimbusError
    /// CloudKit's user info (`CKRecordChangedErrorClientRecordKey`, `CKPartialErrorsByItemIDKey`, …).
    public var userInfo: [String: Any] { info.values }
    var info: CKErrorInfo
    /// For `serverRecordChanged`: the record as the server has it.
    public var serverRecord: CKRecord? {
        info.values[CKRecordChangedErrorServerRecordKey] as? CKRecord ?? underlying.serverRecord.map { CKRecord(record: $0) }
    }
    public var retryAfterSeconds: Double? { underlying.retryAfter ?? info.values[CKErrorRetryAfterKey] as? Double }
    public var description: String { "CKError(\(code)): \(underlying.reason)" }
    public var errorDescription: String? { underlying.reason }

    public init(_ error: any Error, userInfo: [String: Any] = [:]) {
        if let ck = error as? CKError {
            self = ck
            if !userInfo.isEmpty { info = CKErrorInfo(ck.info.values.merging(userInfo) { $1 }) }
            return
        }
        info = CKErrorInfo(userInfo)
        let nimbus = error as? NimbusError ?? NimbusError(.internalError, reason: "\(error)")
        underlying = nimbus
        switch nimbus.code {
        case .serverRecordChanged: code = .serverRecordChanged
        case .constraintViolation: code = .constraintViolation
        case .unknownItem: code = .unknownItem
        case .zoneNotFound: code = .zoneNotFound
        case .changeTokenExpired: code = .changeTokenExpired
        case .requestRateLimited: code = .requestRateLimited
        case .serviceUnavailable: code = .serviceUnavailable
        case .limitExceeded: code = .limitExceeded
        case .quotaExceeded: code = .quotaExceeded
        case .notAuthenticated: code = .notAuthenticated
        case .permissionFailure: code = .permissionFailure
        case .invalidArguments: code = .invalidArguments
        case .referenceViolation: code = .referenceViolation
        case .batchRequestFailed: code = .batchRequestFailed
        case .internalError: code = .internalError
        case .networkFailure: code = .networkFailure
        case .serverResponseBad: code = .serverRejectedRequest
        case .assetCorrupted: code = .assetNotAvailable
        case .assetFileNotFound: code = .assetFileNotFound
        // CloudKit's code when encrypted data cannot be read on this device yet; `underlying.code` says which.
        case .encryptionKeyMissing: code = .accountTemporarilyUnavailable
        case .decryptionFailed: code = .internalError
        }
    }
}
