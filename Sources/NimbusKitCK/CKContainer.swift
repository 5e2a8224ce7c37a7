import Foundation

/// Whether this device can use the server (CloudKit: whether an iCloud account is signed in).
public enum CKAccountStatus: Int, Sendable {
    case couldNotDetermine = 0, available = 1, restricted = 2, noAccount = 3, temporarilyUnavailable = 4
}

/// An app's container on the Nimbus server configured with `NimbusCK.configure` or the
/// `NIMBUS_*` environment variables.
public final class CKContainer: @unchecked Sendable {
    // Safe: immutable after init.
    public let containerIdentifier: String?
    let container: Container?

    public init(identifier: String) {
        containerIdentifier = identifier
        container = NimbusCK.configuration.map { Container(identifier: identifier, configuration: $0) }
        container?.keyStore = NimbusCK.keyStore
    }

    public var privateCloudDatabase: CKDatabase { CKDatabase(container: container) }

    /// `.available` when the server answers with this device's user, `.noAccount` when the token
    /// is refused or no server is configured, `.temporarilyUnavailable` when the server cannot be
    /// reached or is unavailable (a retryable error), `.couldNotDetermine` for any other answer.
    public func accountStatus() async throws -> CKAccountStatus {
        guard let container else { return .noAccount }
        do {
            _ = try await container.currentUserRecordName()
            return .available
        } catch let error as NimbusError where error.code == .notAuthenticated {
            return .noAccount
        } catch let error as NimbusError where error.isRetryable {
            return .temporarilyUnavailable
        } catch {
            return .couldNotDetermine
        }
    }

    public func accountStatus(completionHandler: @escaping (CKAccountStatus, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.accountStatus() }) { status, error in completionHandler(status ?? .couldNotDetermine, error) }
    }
}
