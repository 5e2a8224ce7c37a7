import Foundation

extension SyncEngine {
    /// Sends the outbox (or the changes of `zones` only) until it is empty, everything left waits
    /// for a retry, or the server cannot be reached, and says what happened: what the server
    /// acknowledged, what it parked, what is left. Pending zone changes go first
    /// (SyncEngine+Zones). A change whose own input fails (a missing asset file, a record over a
    /// limit, a field the server refuses) is parked with its code and the rest of its batch is
    /// sent; a failure of a request itself (no answer, 5xx, 408, 429) backs off (with jitter, at
    /// least `retryAfter`) and, with automatic sending, is retried. `maxRequests` bounds the round.
    @discardableResult
    public func sendChanges(in zones: Set<ZoneID>? = nil, maxRequests: Int? = nil) async -> SendReport {
        await sendChanges(scope: zones.map { .zones($0) } ?? .all, maxRequests: maxRequests)
    }

    /// Sends the changes in `scope` (see `sendChanges(in:maxRequests:)`); a `records` scope also
    /// sends the zone changes of those records' zones.
    @discardableResult
    public func sendChanges(scope: SyncScope, maxRequests: Int? = nil) async -> SendReport {
        var report = SendReport()
        var requests = 0
        var stopped = false
        while !stopped, maxRequests.map({ requests < $0 }) ?? true {
            if let retryAt, retryAt > Date() { break }
            let batch = nextZoneBatch(scope)
            guard !batch.isEmpty else { break }
            requests += 1
            let (done, sent) = await sendZones(batch)
            report.add(sent)
            if !done {
                report.stoppedBy = lastError
                stopped = true
            }
        }
        while !stopped, maxRequests.map({ requests < $0 }) ?? true {
            requests += 1
            if let retryAt, retryAt > Date() { break }
            let batch = await supplyRecords(for: nextBatch(in: scope), in: scope)  // the pull model's records (SyncEngine+Pull)
            guard !batch.isEmpty else { break }
            let (done, sent) = await send(batch)
            report.add(sent)
            if !done {
                report.stoppedBy = lastError
                break
            }
        }
        report.left = state.outbox.lazy.filter { scope.contains($0.recordID) }.count
            + state.zoneChanges.pending.lazy.filter { scope.contains(zone: $0.change.zoneID) }.count
        return report
    }

    /// Sets how many records one round puts in a request (the server's limits split it further).
    public func setBatchSize(_ size: Int) { batchSize = max(1, size) }

    /// The oldest entries in `scope` not in flight (the outbox is kept in enqueue order), but none
    /// of a zone whose zone change is pending: it goes first.
    func nextBatch(in scope: SyncScope) -> [OutboxEntry] {
        let blocked = state.zoneChanges.blockedZones
        return Array(state.outbox.lazy.filter {
            !self.inFlight.contains($0.recordID) && scope.contains($0.recordID) && !blocked.contains($0.recordID.zoneID)
        }.prefix(batchSize))
    }

    /// Where an entry is in the outbox. Answers of one batch are applied against one map of
    /// positions; removals wait for `removeAnswered` so that the positions stay valid.
    func outboxIndex(of id: RecordID) -> Int? {
        if let positions = outboxPositions, let index = positions[id], index < state.outbox.count,
           state.outbox[index].recordID == id {
            return index
        }
        outboxPositions = Dictionary(state.outbox.enumerated().map { ($1.recordID, $0) }, uniquingKeysWith: { a, _ in a })
        return outboxPositions?[id]
    }

    /// Removes the entries marked as answered, in one pass.
    private func removeAnswered() {
        guard !answered.isEmpty else { return }
        state.outbox.removeAll { answered.contains($0.recordID) }
        answered = []
        outboxPositions = nil
    }

    /// Sends one batch; false when a request-level failure stopped the round. Returns what the
    /// server answered for it.
    private func send(_ batch: [OutboxEntry]) async -> (Bool, SentChanges) {
        for entry in batch { inFlight.insert(entry.recordID) }
        defer { for entry in batch { inFlight.remove(entry.recordID) } }
        let operations = batch.map(Self.operation)
        do {
            let results = try await database.modify(operations)
            sendBackoff.reset()
            retryAt = nil
            noteRequest(nil)
            return (true, await handle(results, of: batch))
        } catch {
            let failure = error as? NimbusError ?? NimbusError(.internalError, reason: "\(error)")
            return await handleRequestFailure(failure, batch: batch)
        }
    }

    /// The wire operation of an entry: a new record is an idempotent `create` (its name is the
    /// client's); a fetched one an `update` of its changed fields; deletes never fail on a
    /// missing record.
    static func operation(_ entry: OutboxEntry) -> RecordOperation {
        switch entry.change {
        case .save(let record): return .save(record)
        case .delete(let id): return .delete(id)
        }
    }

    private func handleRequestFailure(_ error: NimbusError, batch: [OutboxEntry]) async -> (Bool, SentChanges) {
        noteRequest(error)
        switch error.code {
        case .limitExceeded where batch.count == 1, .invalidArguments where batch.count == 1,
             .assetFileNotFound where batch.count == 1:
            // The one change is what the server refuses.
            var sent = SentChanges()
            park(batch[0], error, into: &sent)
            removeAnswered()
            saveState()
            await report(sent)
            return (true, sent)
        case .limitExceeded, .invalidArguments, .assetFileNotFound:
            // Find the refused change by halves; the rest goes through.
            let half = batch.count / 2
            let (first, firstSent) = await send(Array(batch[..<half]))
            let (second, secondSent) = await send(Array(batch[half...]))
            var sent = firstSent
            sent.add(secondSent)
            return (first && second, sent)
        case .zoneNotFound:
            await recreateZones(of: batch)
            return (true, SentChanges())
        default:
            // Retryable (network, 5xx, 408, throttled, garbage) or an authentication problem: the
            // entries stay; try again after a backoff.
            let delay = sendBackoff.nextDelay(retryAfter: error.retryAfter)
            retryAt = Date().addingTimeInterval(delay)
            if automaticSending && error.code != .notAuthenticated { scheduleSend(after: delay) }
            return (false, SentChanges())
        }
    }

    private func recreateZones(of batch: [OutboxEntry]) async {
        let zones = Set(batch.map(\.recordID.zoneID)).subtracting([ZoneID.default])
        _ = try? await database.modifyZones(saving: Array(zones))
    }

    /// Applies per-record answers to the outbox.
    private func handle(_ results: [Result<RecordResult, NimbusError>], of batch: [OutboxEntry]) async -> SentChanges {
        var sent = SentChanges()
        var zonesToCreate: Set<ZoneID> = []
        for (entry, result) in zip(batch, results) {
            switch result {
            case .success(.saved(let record)):
                acknowledge(entry, server: record)
                sent.saved.append(record)
            case .success(.deleted(let id)):
                acknowledge(entry, server: nil)
                sent.deleted.append(id)
            case .failure(let error):
                await handleItemError(error, entry: entry, sent: &sent, zonesToCreate: &zonesToCreate)
            }
        }
        if !zonesToCreate.isEmpty { _ = try? await database.modifyZones(saving: Array(zonesToCreate)) }
        removeAnswered()
        noteKnown(sent)
        saveState()
        publishStatus()
        await report(sent)
        return sent
    }

    private func handleItemError(_ error: NimbusError, entry: OutboxEntry, sent: inout SentChanges,
                                 zonesToCreate: inout Set<ZoneID>) async {
        switch (error.code, entry.change) {
        case (.unknownItem, .delete(let id)):
            acknowledge(entry, server: nil)  // already gone: the delete is done
            sent.deleted.append(id)
        case (.serverRecordChanged, .save(let local)):
            guard let server = error.serverRecord else { return park(entry, error, into: &sent) }
            await resolve(entry, local: local, base: local.serverFields.map { _ in local.baseRecord }, server: server, sent: &sent)
        case (.constraintViolation, .save(let local)):
            // A create met a record with other content: compare with the server's copy.
            guard let server = try? await database.record(for: local.id) else { return retryLater(entry, error) }
            await resolve(entry, local: local, base: nil, server: server, sent: &sent)
        case (.unknownItem, .save(var local)):
            // Updated here, deleted there.
            if conflictPolicy == .serverWins {
                acknowledge(entry, server: nil)
                sent.deleted.append(local.id)
            } else {
                local.changeTag = nil
                local.serverFields = nil
                replace(entry, with: .save(local))
            }
        case (.zoneNotFound, _):
            // Not when a zone delete sent meanwhile dropped the entry: that would make the zone again.
            if outboxIndex(of: entry.recordID) != nil { zonesToCreate.insert(entry.recordID.zoneID) }
        case _ where error.isRetryable:
            retryLater(entry, error)
        default:
            park(entry, error, into: &sent)
        }
    }

    /// A conflict: our own write whose answer was lost is success; anything else goes through
    /// the delegate's resolution.
    private func resolve(_ entry: OutboxEntry, local: Record, base: Record?, server: Record, sent: inout SentChanges) async {
        let intended = local.existsOnServer ? local.changedKeys : Array(local.fields.keys)
        if server.recordType == local.recordType && intended.allSatisfy({ Record.sameValue(server.fields[$0], local.fields[$0]) })
            && (local.existsOnServer || Set(server.fields.keys) == Set(local.fields.keys)) {
            acknowledge(entry, server: server)
            sent.saved.append(server)
            return
        }
        let conflict = Conflict(base: base, local: local, server: server)
        let resolution = await delegate?.syncEngine(self, resolve: conflict) ?? conflictPolicy.resolve(conflict)
        var next = local
        next.adoptServerCopy(server)
        switch resolution {
        case .useServer:
            acknowledge(entry, server: server)
            sent.replacedByServer.append(server)
            return
        case .useLocal:
            next.fields = local.fields
        case .useFields(let fields):
            next.fields = fields
        }
        if next.changedKeys.isEmpty {
            acknowledge(entry, server: server)
            sent.saved.append(server)
        } else {
            replace(entry, with: .save(next))
        }
    }

    /// Removes an answered entry, unless it changed while the request was out: then the newer
    /// change stays, based on the server's new copy.
    private func acknowledge(_ entry: OutboxEntry, server: Record?) {
        guard let index = outboxIndex(of: entry.recordID), !answered.contains(entry.recordID) else { return }
        if state.outbox[index].revision == entry.revision {
            answered.insert(entry.recordID)
            return
        }
        if case .save(var newer) = state.outbox[index].change, let server {
            newer.changeTag = server.changeTag
            newer.serverFields = server.fields
            state.outbox[index].change = .save(newer)
            state.outbox[index].revision += 1
        }
    }

    private func replace(_ entry: OutboxEntry, with change: PendingChange) {
        guard let index = outboxIndex(of: entry.recordID), !answered.contains(entry.recordID) else { return }
        if state.outbox[index].revision == entry.revision {
            state.outbox[index].change = change
        } else if case .save(var newer) = state.outbox[index].change, case .save(let resolved) = change {
            newer.changeTag = resolved.changeTag
            newer.serverFields = resolved.serverFields
            state.outbox[index].change = .save(newer)
        }
        // Every change of an entry gets a new revision (the state file's encoding cache keys on it).
        state.outbox[index].revision += 1
    }

    private func retryLater(_ entry: OutboxEntry, _ error: NimbusError) {
        guard let index = outboxIndex(of: entry.recordID), !answered.contains(entry.recordID) else { return }
        state.outbox[index].attempts += 1
        state.outbox[index].lastError = FailedChange.Cause(error)
        let delay = sendBackoff.nextDelay(retryAfter: error.retryAfter)
        retryAt = Date().addingTimeInterval(delay)
        if automaticSending { scheduleSend(after: delay) }
    }

    private func park(_ entry: OutboxEntry, _ error: NimbusError, into sent: inout SentChanges) {
        guard let index = outboxIndex(of: entry.recordID), !answered.contains(entry.recordID),
              state.outbox[index].revision == entry.revision else { return }
        answered.insert(entry.recordID)
        let failed = FailedChange(change: entry.change, cause: FailedChange.Cause(error), failedAt: Date())
        state.failed.append(failed)
        sent.failed.append(failed)
    }

    /// Saves the state after answers: appended to the journal but not fsync'd: answers need not
    /// survive a power cut, since entries sent again cannot duplicate. A failure to save is
    /// reported, and the answered entries are simply sent again later.
    func saveState() {
        do { try persist(durable: false) } catch { noteRequest(error as? NimbusError) }
    }

    func report(_ sent: SentChanges) async {
        guard !sent.isEmpty else { return }
        await delegate?.syncEngine(self, didSend: sent)
    }

    /// Runs `sendChanges` now, or after a delay. Only a retry still sleeping is replaced by a later
    /// schedule: a send under way is never cancelled (that would fail a request the server may
    /// already have done).
    func scheduleSend(after delay: TimeInterval) {
        guard delay > 0 else {
            Task { await self.sendChanges() }
            return
        }
        retryTask?.cancel()
        retryTask = Task { [weak self] in
            try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
            guard !Task.isCancelled, let self else { return }
            await self.startScheduledRetry()
        }
    }

    /// The retry's sleep is over: send in a task of its own, out of reach of `retryTask?.cancel()`.
    private func startScheduledRetry() {
        retryTask = nil
        Task { await self.retryNow() }
    }

    private func retryNow() async {
        retryAt = nil
        await sendChanges()
    }
}

extension Record {
    /// The last synced copy this record was edited from.
    var baseRecord: Record {
        var base = self
        base.fields = serverFields ?? [:]
        return base
    }
}
