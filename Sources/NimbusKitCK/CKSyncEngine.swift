import Foundation

/// Apple's sync engine (iOS 17) running on NimbusKit's `SyncEngine`: the app's pending changes go
/// into NimbusKit's durable outbox (the pull model: saves by record ID, records supplied by the
/// delegate's `nextRecordZoneChangeBatch` when a request is about to carry them), fetched changes
/// and send outcomes arrive as `handleEvent` events, and `automaticallySync` holds the live
/// long-poll. See docs/client.md for what differs from Apple's.
public final class CKSyncEngine: @unchecked Sendable {
    // Safe: immutable after init; `state` and `bridge` guard their own mutable parts.

    /// How a sync engine is set up (Apple's names).
    public struct Configuration: @unchecked Sendable {
        // Safe as Apple's: built by one owner before the engine is made.
        public var database: CKDatabase
        /// The last `stateUpdate` event's serialization; nil on first launch.
        public var stateSerialization: State.Serialization?
        public weak var delegate: (any CKSyncEngineDelegate)?
        /// Sends soon after changes are added and fetches as soon as the server has changes.
        public var automaticallySync = true
        public var subscriptionID: CKSubscription.ID?

        public init(database: CKDatabase, stateSerialization: State.Serialization?, delegate: any CKSyncEngineDelegate) {
            self.database = database
            self.stateSerialization = stateSerialization
            self.delegate = delegate
        }
    }

    public let database: CKDatabase
    public let state: State
    weak var delegate: (any CKSyncEngineDelegate)?
    /// NimbusKit's engine underneath (status, failed entries, conflict policies); nil when this
    /// engine is unavailable (`unavailableError`).
    public let nimbusEngine: SyncEngine?
    let bridge: CKSyncEngineBridge
    let automaticallySync: Bool

    /// Where engines keep their state files: `NIMBUS_STATE_DIR`, else Application Support/NimbusKitCK.
    public static var stateDirectory: URL {
        if let path = ProcessInfo.processInfo.environment["NIMBUS_STATE_DIR"], !path.isEmpty { return URL(fileURLWithPath: path) }
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        return base.appendingPathComponent("NimbusKitCK")
    }

    /// Why the state of `Configuration.stateSerialization` could not be opened, if it could not
    /// (Nimbus's addition): the engine then started with an empty state (see `init`).
    public let stateOpenError: (any Error)?

    /// Why this engine cannot sync, if it cannot (Nimbus's addition): `notAuthenticated` when no
    /// server is configured, `internalError` when no directory could hold its state.
    /// `fetchChanges` and `sendChanges` throw it; its message says what to fix.
    public let unavailableError: CKError?

    /// Opens the engine's state (a new one without a serialization). A state that cannot be
    /// opened (a damaged or unreadable journal) does not stop the program: the file is moved
    /// aside (`<journal>.unreadable-<time>`), the reason goes to standard error and to
    /// `stateOpenError`, and the engine starts with an empty state whose serialization reaches
    /// the app in a `stateUpdate` event at once; the next fetch brings every zone again. Nor
    /// does a database without a server, or a state no directory can hold: the engine is then
    /// unavailable, as CloudKit's is without an iCloud account (see `unavailableError`).
    public convenience init(_ configuration: Configuration) {
        self.init(configuration, stateDirectories: [CKSyncEngine.stateDirectory, FileManager.default.temporaryDirectory])
    }

    /// `stateDirectories`: where a fresh state is made, in order of preference.
    init(_ configuration: Configuration, stateDirectories: [URL]) {
        database = configuration.database
        delegate = configuration.delegate
        automaticallySync = configuration.automaticallySync
        var serialization = configuration.stateSerialization
            ?? State.Serialization.fresh(in: stateDirectories.first ?? FileManager.default.temporaryDirectory)
        let bridge = CKSyncEngineBridge()
        self.bridge = bridge
        let opened = CKSyncEngine.open(configuration.database, serialization: &serialization, bridge: bridge,
                                       directories: stateDirectories)
        nimbusEngine = opened.engine
        stateOpenError = opened.stateError
        unavailableError = opened.unavailable
        state = State(serialization: serialization, engine: opened.engine)
        bridge.syncEngine = self
        state.syncEngine = self
        state.loadPending()
        let isNew = opened.engine != nil && (configuration.stateSerialization == nil || opened.stateError != nil)
        let automatic = automaticallySync
        state.schedule { [self] in
            if isNew { await self.emit(.stateUpdate(.init(stateSerialization: self.state.serialization))) }
            await self.checkAccount()
            if automatic { await self.nimbusEngine?.startLive() }
        }
    }

    /// Fetches the changes of the zones in `options.scope` since the saved tokens; the delegate
    /// gets them as events.
    public func fetchChanges(_ options: FetchChangesOptions = FetchChangesOptions()) async throws {
        let nimbusEngine = try availableEngine()
        await state.flush()
        await emit(.willFetchChanges(.init()))
        do { try await nimbusEngine.fetchChanges(scope: options.scope.nimbus) } catch { throw CKError(error) }
        await emit(.didFetchChanges(.init()))
    }

    /// Sends the pending zone changes, then the pending record changes (their records from
    /// `nextRecordZoneChangeBatch`), of `options.scope`; outcomes arrive as `sentDatabaseChanges`
    /// / `sentRecordZoneChanges`.
    public func sendChanges(_ options: SendChangesOptions = SendChangesOptions()) async throws {
        let nimbusEngine = try availableEngine()
        await state.flush()
        let context = SendChangesContext(reason: .manual, options: options)
        await emit(.willSendChanges(.init(context: context)))
        bridge.setReason(.manual, options: options)
        await nimbusEngine.sendChanges(scope: options.scope.nimbus)
        bridge.setReason(.scheduled, options: SendChangesOptions())
        await state.refresh()
        await emit(.didSendChanges(.init(context: context)))
    }

    /// Stops automatic sync (the live long-poll and scheduled sends).
    public func cancelOperations() async { await nimbusEngine?.stopLive() }

    /// NimbusKit's engine, or the reason there is none.
    private func availableEngine() throws -> SyncEngine {
        guard let nimbusEngine else { throw unavailableError ?? CKError(.internalError) }
        return nimbusEngine
    }

    func emit(_ event: Event) async {
        guard let delegate else { return }
        await delegate.handleEvent(event, syncEngine: self)
    }

    /// Tells the delegate of a sign-in, sign-out or account switch since the saved state; no
    /// server configured is signed out (CloudKit without an iCloud account). An engine without
    /// a state it can keep does not check (a disk problem is no sign-out: apps delete their
    /// data on one).
    private func checkAccount() async {
        let previous = state.serialization.userRecordName
        let current: String?
        if let unavailableError {
            guard unavailableError.code == .notAuthenticated else { return }
            current = nil
        } else {
            do {
                current = try await database.nimbusDatabase().container.currentUserRecordName()
            } catch let error as NimbusError where error.code == .notAuthenticated {
                current = nil
            } catch {
                return
            }
        }
        guard current != previous else { return }
        let change: Event.AccountChange.ChangeType
        switch (previous, current) {
        case (nil, let now?): change = .signIn(currentUser: CKRecord.ID(recordName: now))
        case (let was?, nil): change = .signOut(previousUser: CKRecord.ID(recordName: was))
        case (let was?, let now?): change = .switchAccounts(previousUser: CKRecord.ID(recordName: was), currentUser: CKRecord.ID(recordName: now))
        default: return
        }
        state.setUser(current)
        await emit(.accountChange(.init(changeType: change)))
        await emit(.stateUpdate(.init(stateSerialization: state.serialization)))
    }
}
