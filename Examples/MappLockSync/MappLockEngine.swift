import Foundation
import NimbusKitCK

/// The local configurations (a JSON file) and NimbusKit's engine behind CloudSyncService's
/// three stubs: merge, upload through the durable outbox, conflicts by the later `modifiedAt`.
final class MappLockEngine: SyncEngineDelegate, @unchecked Sendable {
    // Safe: `local` is only touched under `lock`.
    static let shared = MappLockEngine()

    struct Entry: Codable {
        var configuration: SessionConfiguration
        /// The server's copy this device last saw (its change tag makes saves updates).
        var server: Record?
        var dirty: Bool
    }

    private let lock = NSLock()
    private var local: [String: Entry]
    private let fileURL: URL
    private var engine: SyncEngine?
    private var wakes = 0
    private var tail: Task<Void, Never>?
    private var ready = false

    private init() {
        let directory = URL(fileURLWithPath: ProcessInfo.processInfo.environment["MAPPLOCK_DIR"] ?? FileManager.default.currentDirectoryPath)
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        fileURL = directory.appendingPathComponent("configurations.json")
        local = (try? JSONDecoder().decode([String: Entry].self, from: Data(contentsOf: fileURL))) ?? [:]
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    private func save() {
        try? JSONEncoder().encode(local).write(to: fileURL, options: .atomic)
    }

    func syncEngine() throws -> SyncEngine {
        if let engine = locked({ engine }) { return engine }
        let database = try CKContainer(identifier: "iCloud.com.mapplock.universal").privateCloudDatabase.nimbusDatabase()
        let made = try SyncEngine(database: database, stateURL: fileURL.deletingLastPathComponent().appendingPathComponent("engine.journal"),
                                  delegate: self, conflictPolicy: .lastWriterWins(field: "modifiedAt"))
        locked { engine = made }
        return made
    }

    // MARK: - The app's side

    func configurations() -> [SessionConfiguration] { locked { local.values.map(\.configuration).sorted { $0.name < $1.name } } }

    func put(_ configuration: SessionConfiguration) {
        locked {
            let server = local[configuration.id.uuidString]?.server
            local[configuration.id.uuidString] = Entry(configuration: configuration, server: server, dirty: true)
            save()
        }
    }

    /// mergeConfigurations: per configuration the later `modifiedAt` wins; a newer local edit stays dirty.
    func merge(_ remote: [SessionConfiguration]) throws -> [SessionConfiguration] {
        locked {
            for configuration in remote {
                let key = configuration.id.uuidString
                if let mine = local[key], mine.dirty, mine.configuration.modifiedAt > configuration.modifiedAt { continue }
                local[key] = Entry(configuration: configuration, server: local[key]?.server, dirty: false)
            }
            save()
            return local.values.map(\.configuration)
        }
    }

    /// uploadLocalChanges: fetch (server copies and tokens), enqueue the dirty IDs, send. One
    /// upload at a time: a notification-driven sync waits for the one running (two overlapping
    /// `SyncEngine.fetchChanges` calls can spin; see the report of issue 32).
    func upload() async throws {
        let task: Task<Void, Error> = locked {
            let previous = tail
            let task = Task { await previous?.value; try await self.uploadNow() }
            tail = Task { _ = try? await task.value }
            return task
        }
        try await task.value
    }

    private func uploadNow() async throws {
        let engine = try syncEngine()
        try await engine.fetchChanges()
        let dirty = locked { local.values.filter(\.dirty).map(\.configuration.recordID) }
        try await engine.enqueueSaves(dirty)
        await engine.sendChanges()
        let failed = await engine.status.failed
        if let first = failed.first { throw CKError(NimbusError(first.cause.code, reason: first.cause.reason)) }
    }

    func subscriptionsReady() { locked { ready = true } }
    var isSubscribed: Bool { locked { ready } }
    func noteWake() { locked { wakes += 1 } }
    var wakeCount: Int { locked { wakes } }

    // MARK: - SyncEngineDelegate

    func syncEngine(_ engine: SyncEngine, apply changes: FetchedChanges) async throws {
        locked {
            for record in changes.modified where record.recordType == SessionConfiguration.recordType {
                guard let configuration = try? SessionConfiguration.from(fields: record.fields) else { continue }
                let key = record.recordName
                if var mine = local[key], mine.dirty, mine.configuration.modifiedAt > configuration.modifiedAt {
                    mine.server = record
                    local[key] = mine
                } else {
                    local[key] = Entry(configuration: configuration, server: record, dirty: false)
                }
            }
            for id in changes.deleted { local[id.recordName] = nil }
            save()
        }
    }

    func syncEngine(_ engine: SyncEngine, recordsToSave ids: [RecordID]) async -> [Record] {
        locked { ids.compactMap { id in local[id.recordName].flatMap { try? $0.configuration.fill($0.server) } } }
    }

    func syncEngine(_ engine: SyncEngine, didSend changes: SentChanges) async {
        locked {
            for record in changes.saved + changes.replacedByServer {
                guard let configuration = try? SessionConfiguration.from(fields: record.fields) else { continue }
                local[record.recordName] = Entry(configuration: configuration, server: record, dirty: false)
            }
            save()
        }
    }
}
