import Foundation

/// Whether this device can use the server (CloudKit: whether an iCloud account is signed in).
public enum CKAccountStatus: Int, Sendable {
    case couldNotDetermine = 0, available = 1, restricted = 2, noAccount = 3, temporarilyUnavailable = 4
}

/// An app's container on the Nimbus server configured with `NimbusCK.configure` or the
/// `NIMBUS_*` environment variables.
public final class CKContainer: Sendable {
    public let containerIdentifier: String?
    let container: Container?

    public convenience init(identifier: String) {
        self.init(identifier: identifier, container: NimbusCK.configuration.map { Container(identifier: identifier, configuration: $0) })
    }

    init(identifier: String?, container: Container?) {
        containerIdentifier = identifier
        self.container = container
        // The account key for `encryptedValues` (NIMBUS_KEY_FILE, or `NimbusCK.configure(keyStore:)`),
        // unless the container came with a key store of its own.
        if let container, container.keyStore == nil { container.keyStore = NimbusCK.keyStore }
        // The encrypted asset fields (`NimbusCK.configure(encryptedAssetFields:)` or the environment's),
        // unless the container declares its own; a bad environment entry is thrown by its databases.
        if let container { _ = NimbusCK.applyEncryptedAssetFields(to: container) }
    }

    public var privateCloudDatabase: CKDatabase { CKDatabase(container: container) }

    /// `.available` when the server answers with this device's user, `.noAccount` when the token
    /// is refused or no server is configured, `.temporarilyUnavailable` when the server cannot be
    /// reached or is unavailable (a retryable error), `.couldNotDetermine` for any other answer.
    /// Posts `.CKAccountChanged` when the status differs from the one this process saw last.
    public func accountStatus() async throws -> CKAccountStatus {
        let status = try await currentAccountStatus()
        let key = containerIdentifier ?? ""
        let previous = CKContainer.lastStatus.withLock { seen in
            defer { seen[key] = status }
            return seen[key]
        }
        if let previous, previous != status { NotificationCenter.default.post(name: .CKAccountChanged, object: nil) }
        return status
    }

    private static let lastStatus = Locked<[String: CKAccountStatus]>([:])

    private func currentAccountStatus() async throws -> CKAccountStatus {
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
