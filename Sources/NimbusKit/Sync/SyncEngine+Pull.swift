import Foundation

/// The pull model, beside the push model of `enqueue(.save(record))`: the app enqueues the IDs
/// of records it changed and hands over the records only when a request is about to carry them
/// (what CKSyncEngine's `nextRecordZoneChangeBatch` does). The outbox then holds a few dozen
/// bytes per change instead of whole records, and a record edited ten times before a send is
/// read once, in its latest form. Deletes are IDs in both models (`enqueue(.delete(id))`).
extension SyncEngine {
    /// Accepts saves of records the delegate will supply at send time
    /// (`syncEngine(_:recordsToSave:)`). Durable on return, as `enqueue`.
    public func enqueueSaves(_ ids: [RecordID]) throws {
        try enqueue(ids.map { PendingChange.save(Record.pulled($0)) })
    }

    /// Accepts the save of one record the delegate will supply at send time.
    public func enqueueSave(_ id: RecordID) throws { try enqueueSaves([id]) }

    /// The batch with each pulled save replaced by the record the delegate supplies now. A record
    /// the delegate no longer has leaves the outbox (the app deleted it; its delete is its own
    /// change). `scope` limits the next entries taken when every one of the batch was dropped. Without a delegate the pulled saves wait and only whole-record changes go.
    func supplyRecords(for batch: [OutboxEntry], in scope: SyncScope = .all) async -> [OutboxEntry] {
        let wanted = batch.filter(\.isPulled).map(\.recordID)
        guard !wanted.isEmpty else { return batch }
        guard let delegate else { return batch.filter { !$0.isPulled } }
        for id in wanted { inFlight.insert(id) }
        let records = await delegate.syncEngine(self, recordsToSave: wanted)
        for id in wanted { inFlight.remove(id) }
        let supplied = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        var ready: [OutboxEntry] = []
        var dropped = false
        for entry in batch {
            guard entry.isPulled else {
                ready.append(entry)
                continue
            }
            // The entry may have changed while the delegate ran: send only what is still current.
            guard let current = state.outbox.entry(for: entry.recordID), current.revision == entry.revision,
                  current.isPulled else { continue }
            if let record = supplied[entry.recordID] {
                var filled = entry
                filled.change = .save(record)
                ready.append(filled)
            } else {
                state.outbox.remove(entry.recordID)
                dropped = true
            }
        }
        if dropped {
            saveState()
            publishStatus()
            // Every entry of the batch was dropped: the round goes on with the next ones.
            if ready.isEmpty {
                return await supplyRecords(for: nextBatch(in: scope), in: scope)
            }
        }
        return ready
    }
}

extension Record {
    /// The outbox's stand-in for a record the delegate supplies at send time: an ID and no type
    /// (a real record always has a type, so the two cannot be confused).
    static func pulled(_ id: RecordID) -> Record { Record(recordType: "", id: id) }
}

extension OutboxEntry {
    /// A save whose record the delegate supplies at send time.
    var isPulled: Bool {
        if case .save(let record) = change { return record.recordType.isEmpty && record.fields.isEmpty }
        return false
    }
}
