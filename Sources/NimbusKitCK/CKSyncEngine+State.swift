import Foundation

extension CKSyncEngine {
    /// The engine's pending changes. Record changes live in NimbusKit's durable outbox (saves by
    /// ID); zone changes in a small file beside it. Both survive a kill once the `stateUpdate`
    /// that follows `add` has been delivered.
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
        }

        private let data: Locked<Pending>
        private let queue = Locked<Task<Void, Never>?>(nil)
        let engine: SyncEngine
        weak var syncEngine: CKSyncEngine?
        /// Apple's flag for changes the app tracks itself; kept for the app to read back.
        public var hasPendingUntrackedChanges: Bool {
            get { untracked.withLock { $0 } }
            set { untracked.withLock { $0 = newValue } }
        }
        private let untracked = Locked(false)

        init(serialization: Serialization, engine: SyncEngine) {
            var pending = Pending(serialization: serialization)
            pending.zones = State.readZones(serialization.zonesURL)
            data = Locked(pending)
            self.engine = engine
        }

        var serialization: Serialization { data.withLock { $0.serialization } }
        func setUser(_ name: String?) { data.withLock { $0.serialization.userRecordName = name } }
        var suppressedIDs: Set<CKRecord.ID> { data.withLock { $0.suppressed } }

        /// The record changes not yet sent, oldest first (read from the outbox shortly after the
        /// engine opens; `fetchChanges` and `sendChanges` wait for it).
        public var pendingRecordZoneChanges: [PendingRecordZoneChange] { data.withLock { $0.records } }
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

        public func add(pendingDatabaseChanges changes: [PendingDatabaseChange]) {
            let zones = data.withLock { pending -> [PendingDatabaseChange] in
                for change in changes {
                    pending.zones.removeAll { $0.zoneID == change.zoneID }
                    pending.zones.append(change)
                }
                return pending.zones
            }
            State.writeZones(zones, to: serialization.zonesURL)
            schedule { [self] in await syncEngine?.emit(.stateUpdate(.init(stateSerialization: serialization))) }
        }

        public func remove(pendingDatabaseChanges changes: [PendingDatabaseChange]) {
            let zones = data.withLock { pending -> [PendingDatabaseChange] in
                pending.zones.removeAll { changes.contains($0) }
                return pending.zones
            }
            State.writeZones(zones, to: serialization.zonesURL)
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

        /// Reads the pending record changes from NimbusKit's outbox.
        func loadPending() { schedule { [self] in await refresh() } }

        func refresh() async {
            let outbox = await engine.pendingChanges
            data.withLock { pending in
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

        // MARK: - Zone changes

        /// Sends the pending zone changes and tells the delegate the outcome.
        func sendDatabaseChanges() async {
            let changes = pendingDatabaseChanges
            guard !changes.isEmpty, let syncEngine else { return }
            var saving: [CKRecordZone] = []
            var deleting: [CKRecordZone.ID] = []
            for change in changes {
                switch change {
                case .saveZone(let zone): saving.append(zone)
                case .deleteZone(let id): deleting.append(id)
                }
            }
            var saved: [CKRecordZone] = []
            var failedSaves: [Event.SentDatabaseChanges.FailedZoneSave] = []
            var deleted: [CKRecordZone.ID] = []
            var failedDeletes: [CKRecordZone.ID: CKError] = [:]
            do {
                let results = try await syncEngine.database.modifyRecordZones(saving: saving, deleting: deleting)
                for zone in saving {
                    switch results.saveResults[zone.zoneID] {
                    case .success?: saved.append(zone)
                    case .failure(let error)?: failedSaves.append(.init(zone: zone, error: CKError(error)))
                    case nil: failedSaves.append(.init(zone: zone, error: CKError(.internalError)))
                    }
                }
                for id in deleting {
                    switch results.deleteResults[id] {
                    case .success?: deleted.append(id)
                    case .failure(let error)?: failedDeletes[id] = CKError(error)
                    case nil: failedDeletes[id] = CKError(.internalError)
                    }
                }
            } catch {
                // The request failed as a whole: the changes stay pending for the next send.
                failedSaves = saving.map { .init(zone: $0, error: CKError(error)) }
                for id in deleting { failedDeletes[id] = CKError(error) }
                await syncEngine.emit(.sentDatabaseChanges(.init(savedZones: [], failedZoneSaves: failedSaves, deletedZoneIDs: [],
                                                                 failedZoneDeletes: failedDeletes)))
                return
            }
            remove(pendingDatabaseChanges: changes)
            await syncEngine.emit(.sentDatabaseChanges(.init(savedZones: saved, failedZoneSaves: failedSaves, deletedZoneIDs: deleted,
                                                             failedZoneDeletes: failedDeletes)))
            await syncEngine.emit(.stateUpdate(.init(stateSerialization: serialization)))
        }

        private struct StoredZoneChange: Codable {
            var delete: Bool
            var zoneName: String
        }

        static func readZones(_ url: URL) -> [PendingDatabaseChange] {
            guard let data = try? Data(contentsOf: url), let stored = try? JSONDecoder().decode([StoredZoneChange].self, from: data) else { return [] }
            return stored.map { $0.delete ? .deleteZone(CKRecordZone.ID(zoneName: $0.zoneName)) : .saveZone(CKRecordZone(zoneName: $0.zoneName)) }
        }

        /// Written atomically (temporary file and rename).
        static func writeZones(_ zones: [PendingDatabaseChange], to url: URL) {
            let stored = zones.map { change -> StoredZoneChange in
                switch change {
                case .saveZone(let zone): return StoredZoneChange(delete: false, zoneName: zone.zoneID.zoneName)
                case .deleteZone(let id): return StoredZoneChange(delete: true, zoneName: id.zoneName)
                }
            }
            do { try JSONEncoder().encode(stored).write(to: url, options: .atomic) } catch {
                FileHandle.standardError.write(Data("CKSyncEngine: could not write \(url.path): \(error)\n".utf8))
            }
        }
    }
}
