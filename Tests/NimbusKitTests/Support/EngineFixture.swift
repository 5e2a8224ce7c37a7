import Foundation
@testable import NimbusKit

/// One device of a test: a replica, its engine and its state file.
struct Device {
    let replica: MemoryReplica
    let engine: SyncEngine
    let stateURL: URL
    let database: Database

    static func make(_ server: TestServer, token: String, url: URL? = nil, stateURL: URL? = nil,
                     policy: ConflictPolicy = .defaultPolicy,
                     resolution: (@Sendable (Conflict) -> ConflictResolution)? = nil) throws -> Device {
        let replica = MemoryReplica(resolution: resolution)
        let database = server.container(token: token, url: url, cache: temporaryDirectory("assets")).privateDatabase
        let state = stateURL ?? temporaryDirectory("state").appendingPathComponent("sync.json")
        let engine = try SyncEngine(database: database, stateURL: state, delegate: replica, conflictPolicy: policy,
                                    retryBackoff: Backoff(base: 0.05, cap: 1))
        return Device(replica: replica, engine: engine, stateURL: state, database: database)
    }

    /// A local edit, enqueued.
    func save(_ record: Record) async throws {
        replica.edit(record)
        try await engine.enqueue(.save(record))
    }

    func delete(_ id: RecordID) async throws {
        replica.remove(id)
        try await engine.enqueue(.delete(id))
    }

    /// Sends until the outbox is empty (or `seconds` pass).
    func flush(_ seconds: Double = 30) async throws -> Bool {
        try await eventually(seconds) {
            await engine.sendChanges()
            return await engine.status.pendingCount == 0
        }
    }

    /// Sends and fetches until nothing is pending and a fetch succeeded.
    func sync(_ seconds: Double = 30) async throws {
        guard try await flush(seconds) else { throw TestFailure("the outbox did not empty: \(await engine.status)") }
        try await engine.fetchChanges()
    }
}

func event(_ title: String, in zone: ZoneID = .default, name: String? = nil) -> Record {
    var record = Record(recordType: "Event", id: name.map { RecordID(recordName: $0, zoneID: zone) } ?? .make(in: zone))
    record.set("title", title)
    record.set("timestamp", Date())
    return record
}
