import Foundation
import NimbusKit

/// NimbusKit's engine in place of SwiftData's CloudKit mirroring: the store's saves become
/// enqueued record IDs (the pull model: the records are read from the store when a request is
/// about to carry them), fetched changes are written to the store, conflicts follow Maccy's
/// rules (HistoryRecords.merge), and a pin made on this Mac beats a concurrent clear elsewhere.
/// The iPhone's copy is read-only: it fetches and never sends.
final class HistorySync: SyncEngineDelegate, @unchecked Sendable {
    // Safe: `server`, `unsent` and `resend` are only touched under `lock`.
    let store: any HistoryStore
    let database: Database
    let writable: Bool
    private(set) var engine: SyncEngine!
    private let lock = NSLock()
    /// The server's copy of each record (its change tag): what the mirroring keeps as system fields.
    private var server: [String: Record]
    /// Records saved here whose save the server has not acknowledged yet.
    private var unsent: Set<String>
    /// Records to send again (a pinned item and its contents deleted by a concurrent clear).
    private var resend: [String] = []
    /// Items whose contents a clear elsewhere deleted: deleted here too at the next send.
    private var emptied: [String] = []
    /// The History zone exists on the server (made by the first Mac; a fetch before it would take
    /// the missing zone for a deleted one and drop the local history).
    private var zoneReady: Bool
    private let stateURL: URL

    private struct State: Codable {
        var server: [String: Record]
        var unsent: Set<String>
        var zoneReady: Bool?
    }

    init(database: Database, directory: URL, store: any HistoryStore, writable: Bool) throws {
        self.database = database
        self.store = store
        self.writable = writable
        stateURL = directory.appendingPathComponent("system-fields.json")
        let state = (try? JSONDecoder().decode(State.self, from: Data(contentsOf: stateURL))) ?? State(server: [:], unsent: [], zoneReady: false)
        server = state.server
        unsent = state.unsent
        zoneReady = state.zoneReady ?? false
        engine = try SyncEngine(database: database, stateURL: directory.appendingPathComponent("engine.journal"),
                                delegate: self)
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    private func persist() {
        let state = locked { State(server: server, unsent: unsent, zoneReady: zoneReady) }
        try? JSONEncoder().encode(state).write(to: stateURL, options: .atomic)
    }

    // MARK: - Local saves (the store's didSave)

    /// The store saved: items and contents inserted or updated, and deleted. Items go first, so a
    /// content's item exists on the server before the content.
    func storeDidSave(items: [String], contents: [String], deleted: [String]) async throws {
        guard writable else { return }
        locked { unsent.formUnion(items + contents) }
        persist()
        try await engine.enqueueSaves((items + contents).map(HistoryRecords.id))
        try await engine.enqueue(deleted.map { .delete(HistoryRecords.id($0)) })
    }

    /// One round: fetch (applying the server's changes), send what is pending, then take back a pin
    /// key two Macs gave to two items.
    func sync() async throws {
        if writable, !locked({ zoneReady }) {
            try await database.createZone(HistoryRecords.zone)
            locked { zoneReady = true }
            persist()
        }
        try await engine.fetchChanges()
        guard writable else { return }
        try await send()
    }

    /// Sends what is pending without fetching first (as the engine's live mode does right after a
    /// save): a concurrent edit on the server comes back as a conflict and is merged in `resolve`.
    func send() async throws {
        guard writable else { return }
        let again = locked { () -> [String] in defer { resend = [] }; return resend }
        if !again.isEmpty { try await engine.enqueueSaves(again.map(HistoryRecords.id)) }
        let gone = locked { () -> [String] in defer { emptied = [] }; return emptied }
        if !gone.isEmpty { try await engine.enqueue(gone.map { .delete(HistoryRecords.id($0)) }) }
        _ = await engine.sendChanges()
        let repinned = HistoryRecords.repinDuplicates(await store.items())
        if !repinned.isEmpty {
            for item in repinned { try await store.putItem(item) }
            try await storeDidSave(items: repinned.map(\.recordName), contents: [], deleted: [])
            _ = await engine.sendChanges()
        }
        if let failed = await engine.status.failed.first { throw NimbusError(failed.cause.code, reason: failed.cause.reason) }
    }

    // MARK: - SyncEngineDelegate

    func syncEngine(_ engine: SyncEngine, apply changes: FetchedChanges) async throws {
        let ordered = changes.modified.filter { $0.recordType == HistoryRecords.itemType }
            + changes.modified.filter { $0.recordType == HistoryRecords.contentType }
        for record in ordered { try await applyModified(record) }
        var kept = Set<String>()
        for id in changes.deleted {
            let name = id.recordName
            if let item = await store.item(name) {
                // A pin made here and not yet sent beats a clear made elsewhere meanwhile.
                if item.pin != nil, locked({ unsent.contains(name) }) {
                    kept.insert(name)
                    await keep([name] + (await store.contents(of: name)).map(\.recordName))
                } else {
                    try await store.removeItem(name)
                    forget(name)
                }
            } else if let content = await store.content(name) {
                let owner = await store.item(content.itemName)
                let deletedWithItem = changes.deleted.contains(HistoryRecords.id(content.itemName))
                if let owner, owner.pin != nil, !deletedWithItem || kept.contains(owner.recordName) {
                    await keep([name])   // the pinned item stays here: so do its contents
                } else {
                    try await store.removeContent(name)
                    forget(name)
                    // Its item was saved here meanwhile (a copy counted) and re-created on the server
                    // without its contents: the clear wins, the empty item goes too.
                    if let owner, !deletedWithItem, await store.contents(of: owner.recordName).isEmpty {
                        try await store.removeItem(owner.recordName)
                        forget(owner.recordName)
                        locked { emptied.append(owner.recordName) }
                    }
                }
            }
        }
        if !changes.unreadable.isEmpty {
            FileHandle.standardError.write(Data("MaccySync: \(changes.unreadable.count) records could not be opened (no key?)\n".utf8))
        }
        persist()
    }

    func syncEngine(_ engine: SyncEngine, recordsToSave ids: [RecordID]) async -> [Record] {
        var records: [Record] = []
        for id in ids {
            let copy = locked { server[id.recordName] }
            if let item = await store.item(id.recordName) {
                records.append(HistoryRecords.record(for: item, server: copy))
            } else if let content = await store.content(id.recordName) {
                records.append(HistoryRecords.record(for: content, server: copy))
            }
        }
        return records
    }

    func syncEngine(_ engine: SyncEngine, didSend changes: SentChanges) async {
        for record in changes.saved + changes.replacedByServer {
            locked {
                server[record.recordName] = record
                unsent.remove(record.recordName)
            }
            // A merged item: the store takes the merge.
            if record.recordType == HistoryRecords.itemType, let mine = await store.item(record.recordName),
               mine != HistoryRecords.item(from: record) {
                try? await store.putItem(HistoryRecords.item(from: record))
            }
        }
        for id in changes.deleted { forget(id.recordName) }
        persist()
    }

    func syncEngine(_ engine: SyncEngine, resolve conflict: Conflict) async -> ConflictResolution {
        .useFields(HistoryRecords.merge(base: conflict.base, local: conflict.local, server: conflict.server))
    }

    func syncEngine(_ engine: SyncEngine, localRecordIDsIn zone: ZoneID) async -> Set<RecordID> {
        var names = Set<String>()
        for item in await store.items() {
            names.insert(item.recordName)
            for content in await store.contents(of: item.recordName) { names.insert(content.recordName) }
        }
        return Set(names.map(HistoryRecords.id))
    }

    // MARK: - Applying

    private func applyModified(_ record: Record) async throws {
        let name = record.recordName
        let base = locked { server[name] }
        locked { server[name] = record }
        if record.recordType == HistoryRecords.itemType {
            var fields = HistoryRecords.item(from: record)
            if let mine = await store.item(name), locked({ unsent.contains(name) }) {
                // Edited here too and not sent yet: merge now; the pending save sends our side.
                let local = HistoryRecords.record(for: mine, server: base)
                var merged = record
                merged.fields = HistoryRecords.merge(base: base, local: local, server: record)
                fields = HistoryRecords.item(from: merged)
            }
            try await store.putItem(fields)
        } else if record.recordType == HistoryRecords.contentType, await store.content(name) == nil {
            var fields = HistoryRecords.content(from: record)
            var file: URL?
            if let sealed = record.fields["asset"]?.assetValue {
                file = try await database.downloadDecryptedAsset(of: record, field: "asset")
                if let cached = sealed.fileURL { try? FileManager.default.removeItem(at: cached) }
                fields.file = file
            }
            try await store.putContent(fields, file: file)
        }
    }

    /// Keeps records the server deleted: they are sent again as new records.
    private func keep(_ names: [String]) async {
        locked {
            for name in names {
                server[name] = nil
                unsent.insert(name)
                resend.append(name)
            }
        }
    }

    private func forget(_ name: String) {
        locked {
            server[name] = nil
            unsent.remove(name)
        }
    }
}
