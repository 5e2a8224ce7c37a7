import Foundation
import Testing
@testable import NimbusKit
@testable import NimbusKitCK

/// A delegate that keeps every event's description and the last serialization it was handed.
actor EventLog: CKSyncEngineDelegate {
    var events: [String] = []
    var serialization: CKSyncEngine.State.Serialization?

    func handleEvent(_ event: CKSyncEngine.Event, syncEngine: CKSyncEngine) async {
        events.append(event.description)
        if case .stateUpdate(let update) = event { serialization = update.stateSerialization }
    }

    func nextRecordZoneChangeBatch(_ context: CKSyncEngine.SendChangesContext, syncEngine: CKSyncEngine) async
        -> CKSyncEngine.RecordZoneChangeBatch? { nil }
}

/// A CKSyncEngine that cannot sync comes up unavailable instead of stopping the program, as
/// CloudKit's does without an iCloud account: no server configured, or no directory that can
/// hold its state. No server is needed: neither engine ever makes a request.
@Suite("CKSyncEngine unavailable")
struct CKSyncEngineUnavailableTests {
    static func make(_ database: CKDatabase, state: CKSyncEngine.State.Serialization?,
                     directories: [URL] = [FileManager.default.temporaryDirectory]) async -> (EventLog, CKSyncEngine) {
        let log = EventLog()
        var configuration = CKSyncEngine.Configuration(database: database, stateSerialization: state, delegate: log)
        configuration.automaticallySync = true
        let engine = CKSyncEngine(configuration, stateDirectories: directories)
        await engine.state.flush()
        return (log, engine)
    }

    static func state(user: String?) -> CKSyncEngine.State.Serialization {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ckse-\(UUID().uuidString)")
        return CKSyncEngine.State.Serialization(journalPath: directory.appendingPathComponent("engine.journal").path, userRecordName: user)
    }

    static func expectError(_ code: CKError.Code, mentioning words: [String], _ work: () async throws -> Void) async {
        do {
            try await work()
            Issue.record("expected CKError(\(code)), nothing was thrown")
        } catch let error as CKError {
            #expect(error.code == code)
            for word in words { #expect(error.localizedDescription.contains(word), "\(word) in \(error.localizedDescription)") }
        } catch {
            Issue.record("expected CKError(\(code)), got \(error)")
        }
    }

    /// No server configured: signed out. A state that had a user gets one `accountChange`
    /// (sign-out) and a `stateUpdate` without the user; fetch and send throw `notAuthenticated`
    /// naming the configuration to set; changes added meanwhile are kept.
    @Test func noServerIsSignedOutAndItsCallsThrowNotAuthenticated() async throws {
        let database = CKContainer(identifier: "iCloud.none", container: nil).privateCloudDatabase
        let (log, engine) = await Self.make(database, state: Self.state(user: "alice"))
        #expect(engine.nimbusEngine == nil)
        #expect(engine.unavailableError?.code == .notAuthenticated)
        let events = await log.events
        #expect(events.filter { $0.hasPrefix("accountChange") }.count == 1, "\(events)")
        #expect(events.first?.hasPrefix("accountChange(signOut") == true, "\(events)")
        #expect(await log.serialization != nil)
        #expect(await log.serialization?.userRecordName == nil)

        let words = ["NIMBUS_URL", "NIMBUS_TOKEN", "NimbusCK.configure"]
        await Self.expectError(.notAuthenticated, mentioning: words) { try await engine.fetchChanges() }
        await Self.expectError(.notAuthenticated, mentioning: words) { try await engine.sendChanges() }
        engine.state.add(pendingRecordZoneChanges: [.saveRecord(CKRecord.ID(recordName: "kept"))])
        await engine.state.flush()
        #expect(engine.state.pendingRecordZoneChanges == [.saveRecord(CKRecord.ID(recordName: "kept"))])
        await engine.cancelOperations()
        #expect(await log.events.filter { $0.hasPrefix("accountChange") }.count == 1)
        #expect(!(await log.events).contains("willFetchChanges"))
    }

    /// First launch without a server: nothing to sign out of, so no `accountChange` (CloudKit
    /// sends none either); the calls still throw.
    @Test func noServerOnFirstLaunchSendsNoAccountChange() async throws {
        let database = CKContainer(identifier: "iCloud.none", container: nil).privateCloudDatabase
        let (log, engine) = await Self.make(database, state: nil)
        #expect(await log.events.isEmpty)
        await Self.expectError(.notAuthenticated, mentioning: ["NIMBUS_URL"]) { try await engine.fetchChanges() }
    }

    /// No directory can hold the state (each path runs through a regular file, which even root
    /// cannot create a directory in): fetch and send throw `internalError` naming the
    /// directories and `NIMBUS_STATE_DIR`. No `accountChange`: a disk problem is no sign-out.
    @Test func noWritableStateDirectoryThrowsInternalErrorNamingTheDirectories() async throws {
        let blocker = FileManager.default.temporaryDirectory.appendingPathComponent("ckse-file-\(UUID().uuidString)")
        try Data("a file, not a directory".utf8).write(to: blocker)
        defer { try? FileManager.default.removeItem(at: blocker) }
        let journal = blocker.appendingPathComponent("state/engine.journal").path
        let directories = [blocker.appendingPathComponent("NimbusKitCK"), blocker.appendingPathComponent("tmp")]
        // A configured server that is never asked: nothing listens on port 9.
        let configuration = NimbusConfiguration(serverURL: try #require(URL(string: "http://127.0.0.1:9")), token: "t", requestTimeout: 1)
        let database = CKContainer(identifier: "iCloud.disk", configuration: configuration).privateCloudDatabase
        let state = CKSyncEngine.State.Serialization(journalPath: journal, userRecordName: "alice")
        let (log, engine) = await Self.make(database, state: state, directories: directories)
        #expect(engine.nimbusEngine == nil)
        #expect(engine.unavailableError?.code == .internalError)
        #expect(engine.stateOpenError != nil)
        #expect(await log.events.isEmpty)
        let words = [journal, directories[0].path, directories[1].path, "NIMBUS_STATE_DIR"]
        await Self.expectError(.internalError, mentioning: words) { try await engine.fetchChanges() }
        await Self.expectError(.internalError, mentioning: words) { try await engine.sendChanges() }
    }

    /// The public init's directories: the state directory, then the temporary one.
    @Test func aWritableFallbackDirectoryStillOpens() async throws {
        let blocker = FileManager.default.temporaryDirectory.appendingPathComponent("ckse-file-\(UUID().uuidString)")
        try Data("x".utf8).write(to: blocker)
        let fallback = FileManager.default.temporaryDirectory.appendingPathComponent("ckse-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: blocker)
            try? FileManager.default.removeItem(at: fallback)
        }
        let configuration = NimbusConfiguration(serverURL: try #require(URL(string: "http://127.0.0.1:9")), token: "t", requestTimeout: 1)
        let database = CKContainer(identifier: "iCloud.disk", configuration: configuration).privateCloudDatabase
        let state = CKSyncEngine.State.Serialization(journalPath: blocker.appendingPathComponent("engine.journal").path)
        var setup = CKSyncEngine.Configuration(database: database, stateSerialization: state, delegate: EventLog())
        setup.automaticallySync = false
        let engine = CKSyncEngine(setup, stateDirectories: [blocker.appendingPathComponent("x"), fallback])
        #expect(engine.unavailableError == nil)
        #expect(engine.nimbusEngine != nil)
        #expect(engine.state.serialization.journalPath.hasPrefix(fallback.path))
    }
}
