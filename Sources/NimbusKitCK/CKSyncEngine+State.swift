import Foundation

extension CKSyncEngine {
    /// The engine's pending changes, in NimbusKit's durable journal: record changes in its outbox
    /// (saves by ID), zone changes as its zone changes (sent before record changes). Both survive
    /// a kill once the `stateUpdate` that follows `add` has been delivered. A zone changes file of
    /// an earlier NimbusKitCK beside the journal is moved into it on first open.
    public final class State: @unchecked Sendable {
        // Safe: `data` and `queue` are only touched under their locks.

        /// What the app persists and hands back next launch (Apple: opaque and Codable).
        public struct Serialization: Codable, Sendable, Hashable {
            /// NimbusKit's journal of this engine.
            let journalPath: String
            /// The account the state belongs to (an account switch is an `accountChange`).
            var userRecordName: String?

            static func fresh(in directory: URL) -> Serialization {
                Serialization(journalPath: directory.appendingPathComponent("CKSyncEngine-\(UUID().uuidString).journal").path)
            }

            var journalURL: URL { URL(fileURLWithPath: journalPath) }
            /// Where an earlier NimbusKitCK kept the pending zone changes (read once, to migrate them).
            var zonesURL: URL { URL(fileURLWithPath: journalPath + ".zones.json") }
        }

        private struct Pending {
            var serialization: Serialization
            var records: [PendingRecordZoneChange] = []
            /// Added, not yet in NimbusKit's outbox (in order).
            var unflushed: [PendingRecordZoneChange] = []
            /// Saves removed by the app: not supplied when the outbox asks for them, so they are dropped.
            var suppressed: Set<CKRecord.ID> = []
            var zones: [PendingDatabaseChange] = []
            /// Zone changes added or removed, not yet in NimbusKit's journal (in order).
            var unflushedZones: [(change: PendingDatabaseChange, remove: Bool)] = []
        }

        private let data: Locked<Pending>
        private let queue = Locked<Task<Void, Never>?>(nil)
        /// Nil while the engine is unavailable: changes added then are kept in memory only.
        let engine: SyncEngine?
        weak var syncEngine: CKSyncEngine?
        /// Apple's flag for changes the app tracks itself; kept for the app to read back.
        public var hasPendingUntrackedChanges: Bool {
            get { untracked.withLock { $0 } }
            set { untracked.withLock { $0 = newValue } }
        }
        private let untracked = Locked(false)

        init(serialization: Serialization, engine: SyncEngine?) {
            data = Locked(Pending(serialization: serialization))
            self.engine = engine
        }

        var serialization: Serialization { data.withLock { $0.serialization } }
        func setUser(_ name: String?) { data.withLock { $0.serialization.userRecordName = name } }
        var suppressedIDs: Set<CKRecord.ID> { data.withLock { $0.suppressed } }

        /// The record changes not yet sent, oldest first (read from the outbox shortly after the
        /// engine opens; `fetchChanges` and `sendChanges` wait for it).
        public var pendingRecordZoneChanges: [PendingRecordZoneChange] { data.withLock { $0.records } }
        /// The zone changes not yet sent, oldest first (as `pendingRecordZoneChanges`).
        public var pendingDatabaseChanges: [PendingDatabaseChange] { data.withLock { $0.zones } }
        /// Nimbus fetches every changed zone in `fetchChanges`; none is left unfetched.
        public var zoneIDsWithUnfetchedServerChanges: [CKRecordZone.ID] { [] }

        public func add(pendingRecordZoneChanges changes: [PendingRecordZoneChange]) {
            guard !changes.isEmpty else { return }
            data.withLock { pending in
                for change in changes {
                    pending.records.removeAll { $0.recordID == change.recordID }
                    pending.records.append(change)
                    pending.suppressed.remove(change.recordID)
                    pending.unflushed.append(change)
                }
            }
            schedule { [self] in
                guard let engine else { return }
                var saves: [RecordID] = []
                var deletes: [PendingChange] = []
                for change in changes {
                    switch change {
                    case .saveRecord(let id): saves.append(id.nimbus)
                    case .deleteRecord(let id): deletes.append(.delete(id.nimbus))
                    }
                }
                do {
                    if !saves.isEmpty { try await engine.enqueueSaves(saves) }
                    if !deletes.isEmpty { try await engine.enqueue(deletes) }
                } catch {
                    FileHandle.standardError.write(Data("CKSyncEngine: the outbox refused changes: \(error)\n".utf8))
                }
                data.withLock { $0.unflushed.removeFirst(min(changes.count, $0.unflushed.count)) }
                await syncEngine?.emit(.stateUpdate(.init(stateSerialization: serialization)))
            }
        }

        /// Drops pending saves (they are not sent); a pending delete already in the outbox is sent.
        public func remove(pendingRecordZoneChanges changes: [PendingRecordZoneChange]) {
            data.withLock { pending in
                for change in changes {
                    pending.records.removeAll { $0 == change }
                    if case .saveRecord(let id) = change { pending.suppressed.insert(id) }
                }
            }
        }

        /// Adds zone changes to NimbusKit's journal (durable before the `stateUpdate` that follows).
        public func add(pendingDatabaseChanges changes: [PendingDatabaseChange]) {
            guard !changes.isEmpty else { return }
            data.withLock { pending in
                for change in changes {
                    State.apply(change, to: &pending.zones)
                    pending.unflushedZones.append((change, false))
                }
            }
            schedule { [self] in
                guard let engine else { return }
                do { try await engine.enqueue(zoneChanges: changes.map(\.nimbus)) } catch {
                    FileHandle.standardError.write(Data("CKSyncEngine: the journal refused zone changes: \(error)\n".utf8))
                }
                data.withLock { $0.unflushedZones.removeFirst(min(changes.count, $0.unflushedZones.count)) }
                await syncEngine?.emit(.stateUpdate(.init(stateSerialization: serialization)))
            }
        }

        public func remove(pendingDatabaseChanges changes: [PendingDatabaseChange]) {
            guard !changes.isEmpty else { return }
            data.withLock { pending in
                pending.zones.removeAll { changes.contains($0) }
                for change in changes { pending.unflushedZones.append((change, true)) }
            }
            schedule { [self] in
                guard let engine else { return }
                do { try await engine.removePendingZoneChanges(changes.map(\.nimbus)) } catch {
                    FileHandle.standardError.write(Data("CKSyncEngine: the journal refused removing zone changes: \(error)\n".utf8))
                }
                data.withLock { $0.unflushedZones.removeFirst(min(changes.count, $0.unflushedZones.count)) }
                await syncEngine?.emit(.stateUpdate(.init(stateSerialization: serialization)))
            }
        }

        /// A zone change over the pending ones, as NimbusKit's journal adds it: a save after a
        /// pending save is nothing new, a delete replaces the zone's changes.
        static func apply(_ change: PendingDatabaseChange, to zones: inout [PendingDatabaseChange]) {
            switch change {
            case .saveZone:
                if let last = zones.last(where: { $0.zoneID == change.zoneID }), case .saveZone = last { return }
            case .deleteZone:
                zones.removeAll { $0.zoneID == change.zoneID }
            }
            zones.append(change)
        }

        // MARK: - Work in order

        /// Runs `work` after everything scheduled before it.
        func schedule(_ work: @escaping @Sendable () async -> Void) {
            queue.withLock { last in
                let previous = last
                last = Task {
                    await previous?.value
                    await work()
                }
            }
        }

        /// Waits for everything scheduled so far.
        func flush() async {
            let last = queue.withLock { $0 }
            await last?.value
        }

        /// Moves the zone changes file of an earlier NimbusKitCK into the journal, then reads the
        /// pending changes from NimbusKit's engine.
        func loadPending() {
            schedule { [self] in
                guard let engine else { return }
                let url = serialization.zonesURL
                if FileManager.default.fileExists(atPath: url.path) {
                    do {
                        try await engine.enqueue(zoneChanges: State.readZones(url).map(\.nimbus))
                        try FileManager.default.removeItem(at: url)
                    } catch {
                        FileHandle.standardError.write(Data("CKSyncEngine: could not move \(url.path) into the journal: \(error)\n".utf8))
                    }
                }
                await refresh()
            }
        }

        func refresh() async {
            guard let engine else { return }
            let outbox = await engine.pendingChanges
            let zoneChanges = await engine.pendingZoneChanges
            data.withLock { pending in
                var zones = zoneChanges.map(PendingDatabaseChange.init)
                for (change, remove) in pending.unflushedZones {
                    if remove { zones.removeAll { $0 == change } } else { State.apply(change, to: &zones) }
                }
                pending.zones = zones
                let stillPending = Set(outbox.map(\.recordID))
                pending.suppressed = pending.suppressed.filter { stillPending.contains($0.nimbus) }
                var records: [PendingRecordZoneChange] = outbox.compactMap { change in
                    let made: PendingRecordZoneChange
                    switch change {
                    case .save(let record): made = .saveRecord(CKRecord.ID(record.id))
                    case .delete(let id): made = .deleteRecord(CKRecord.ID(id))
                    }
                    return pending.suppressed.contains(made.recordID) ? nil : made
                }
                for change in pending.unflushed where !records.contains(where: { $0.recordID == change.recordID }) { records.append(change) }
                pending.records = records
            }
        }

        // MARK: - The earlier zones file

        private struct StoredZoneChange: Codable {
            var delete: Bool
            var zoneName: String
        }

        static func readZones(_ url: URL) -> [PendingDatabaseChange] {
            guard let data = try? Data(contentsOf: url), let stored = try? JSONDecoder().decode([StoredZoneChange].self, from: data) else { return [] }
            return stored.map { $0.delete ? .deleteZone(CKRecordZone.ID(zoneName: $0.zoneName)) : .saveZone(CKRecordZone(zoneName: $0.zoneName)) }
        }
    }
}
