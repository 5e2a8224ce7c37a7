import Foundation

extension Notification.Name {
    /// Posted when the account changes (CloudKit: the iCloud account). Nimbus posts it when
    /// `CKContainer.accountStatus()` answers other than it last did in this process (a revoked token).
    public static let CKAccountChanged = Notification.Name("CKAccountChanged")
}

extension CKContainer {
    /// A container on its own server: per-container configuration instead of `NimbusCK.configure`.
    public convenience init(identifier: String, configuration: NimbusConfiguration) {
        self.init(identifier: identifier, container: Container(identifier: identifier, configuration: configuration))
    }

    /// The CloudKit view of a NimbusKit container, e.g. the one `Container.enroll(pairingURL:…)`
    /// returns for a newly paired device.
    public convenience init(_ container: Container) { self.init(identifier: container.identifier, container: container) }

    /// The app's default container: `NIMBUS_CONTAINER`, else `iCloud.` and the bundle identifier.
    public static func `default`() -> CKContainer {
        let environment = ProcessInfo.processInfo.environment
        if let identifier = environment["NIMBUS_CONTAINER"], !identifier.isEmpty { return CKContainer(identifier: identifier) }
        return CKContainer(identifier: "iCloud." + (Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName))
    }

    /// The NimbusKit container underneath (nil when no server is configured).
    public var nimbusContainer: Container? { container }

    /// Nimbus serves the private database; the public and shared ones answer `permissionFailure`.
    public var publicCloudDatabase: CKDatabase { CKDatabase(container: container, scope: .public) }
    public var sharedCloudDatabase: CKDatabase { CKDatabase(container: container, scope: .shared) }

    public func database(with databaseScope: CKDatabase.Scope) -> CKDatabase { CKDatabase(container: container, scope: databaseScope) }

    /// The current user's record ID (the server's user record name).
    public func userRecordID() async throws -> CKRecord.ID {
        guard let container else {
            throw CKError(NimbusError(.notAuthenticated, reason: "No Nimbus server is configured: call NimbusCK.configure(_:) "
                + "or set NIMBUS_URL and NIMBUS_TOKEN."))
        }
        do { return CKRecord.ID(recordName: try await container.currentUserRecordName()) } catch { throw CKError(error) }
    }

    public func fetchUserRecordID(completionHandler: @escaping (CKRecord.ID?, (any Error)?) -> Void) {
        NimbusCK.complete({ try await self.userRecordID() }, completionHandler)
    }
}
