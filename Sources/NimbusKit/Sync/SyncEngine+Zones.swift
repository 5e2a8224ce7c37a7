import Foundation

/// Zone creates and deletes as engine changes (CKSyncEngine's pending database changes): kept in
/// the journal beside the outbox (durable on return, one fsync per call), sent before record
/// changes in every round (`zones/modify`), a refused one parked with its code. Record changes of
/// a zone wait while a change of that zone is pending. When a zone's delete is acknowledged (or
/// answered ZONE_NOT_FOUND: already gone), the record changes of that zone enqueued before the
/// delete are dropped (the server deleted their records with the zone; sending them would make
/// the zone again); those enqueued after it stay and are sent after it (a save of the zone
/// enqueued after the delete makes it again first, else ZONE_NOT_FOUND recovery does).
extension SyncEngine {
    /// Accepts zone changes; on disk when this returns. A save of a zone with a save pending is
    /// nothing new; a delete replaces the zone's pending changes; a save after a delete is sent
    /// after it (the zone is emptied and made again).
    public func enqueue(zoneChanges changes: [PendingZoneChange]) throws {
        guard !changes.isEmpty else { return }
        let (before, sequence) = (state.zoneChanges, state.nextSequence)
        var next = state.nextSequence
        for change in changes { state.zoneChanges.add(change, sequence: &next) }
        state.nextSequence = next
        do {
            try persist()
        } catch {
            (state.zoneChanges, state.nextSequence) = (before, sequence)
            throw error
        }
        publishStatus()
        if automaticSending { scheduleSend(after: 0) }
    }

    /// Accepts the creation of a zone (creating an existing zone succeeds).
    public func enqueueZoneSave(_ zone: ZoneID) throws { try enqueue(zoneChanges: [.save(zone)]) }

    /// Accepts the deletion of a zone with its records (see the extension's note for the record
    /// changes of the zone still pending).
    public func enqueueZoneDelete(_ zone: ZoneID) throws { try enqueue(zoneChanges: [.delete(zone)]) }

    /// The zone changes not yet acknowledged, oldest first.
    public var pendingZoneChanges: [PendingZoneChange] { state.zoneChanges.pending.map(\.change) }

    /// Forgets pending zone changes (one in flight still reaches the server; its answer is ignored).
    public func removePendingZoneChanges(_ changes: [PendingZoneChange]) throws {
        let before = state.zoneChanges
        state.zoneChanges.pending.removeAll { changes.contains($0.change) }
        guard state.zoneChanges != before else { return }
        do { try persist() } catch {
            state.zoneChanges = before
            throw error
        }
        publishStatus()
    }

    /// Record and zone changes not yet acknowledged.
    var hasPendingChanges: Bool { !state.outbox.isEmpty || !state.zoneChanges.pending.isEmpty }

    // MARK: - Sending

    /// The first pending change of each zone in `scope` not in flight (a zone's delete and the
    /// save after it go in separate requests, in order).
    func nextZoneBatch(_ scope: SyncScope) -> [ZoneChangeEntry] {
        var seen: Set<ZoneID> = []
        var batch: [ZoneChangeEntry] = []
        for entry in state.zoneChanges.pending where seen.insert(entry.change.zoneID).inserted {
            if !zonesInFlight.contains(entry.sequence) && scope.contains(zone: entry.change.zoneID) { batch.append(entry) }
        }
        return Array(batch.prefix(batchSize))
    }

    /// Sends one batch of zone changes; false when a request-level failure stopped the round.
    func sendZones(_ batch: [ZoneChangeEntry]) async -> (Bool, SentChanges) {
        for entry in batch { zonesInFlight.insert(entry.sequence) }
        defer { for entry in batch { zonesInFlight.remove(entry.sequence) } }
        // zones/modify answers the saves, then the deletes.
        let ordered = batch.filter { !$0.change.isDelete } + batch.filter(\.change.isDelete)
        do {
            let results = try await database.modifyZones(saving: ordered.filter { !$0.change.isDelete }.map(\.change.zoneID),
                                                         deleting: ordered.filter(\.change.isDelete).map(\.change.zoneID))
            sendBackoff.reset()
            retryAt = nil
            noteRequest(nil)
            var sent = SentChanges()
            for (entry, result) in zip(ordered, results) { handleZoneAnswer(result, entry: entry, sent: &sent) }
            noteKnown(sent)
            saveState()
            publishStatus()
            await report(sent)
            return (true, sent)
        } catch {
            let failure = error as? NimbusError ?? NimbusError(.internalError, reason: "\(error)")
            noteRequest(failure)
            switch failure.code {
            case .invalidArguments where batch.count == 1, .limitExceeded where batch.count == 1:
                var sent = SentChanges()
                parkZoneChange(batch[0], failure, into: &sent)
                saveState()
                publishStatus()
                await report(sent)
                return (true, sent)
            case .invalidArguments, .limitExceeded:
                // Find the refused change by halves; the rest goes through.
                let half = batch.count / 2
                let (first, firstSent) = await sendZones(Array(batch[..<half]))
                let (second, secondSent) = await sendZones(Array(batch[half...]))
                var sent = firstSent
                sent.add(secondSent)
                return (first && second, sent)
            default:
                let delay = sendBackoff.nextDelay(retryAfter: failure.retryAfter)
                retryAt = Date().addingTimeInterval(delay)
                if automaticSending && failure.code != .notAuthenticated { scheduleSend(after: delay) }
                return (false, SentChanges())
            }
        }
    }

    private func handleZoneAnswer(_ result: Result<ZoneInfo, NimbusError>, entry: ZoneChangeEntry, sent: inout SentChanges) {
        guard let index = state.zoneChanges.pending.firstIndex(where: { $0.sequence == entry.sequence }) else { return }
        let zone = entry.change.zoneID
        var failure: NimbusError?
        if case .failure(let error) = result { failure = error }
        // A delete answered ZONE_NOT_FOUND is done: the zone is gone.
        if let error = failure, !(entry.change.isDelete && error.code == .zoneNotFound) {
            if error.isRetryable {
                state.zoneChanges.pending[index].attempts += 1
                let delay = sendBackoff.nextDelay(retryAfter: error.retryAfter)
                retryAt = Date().addingTimeInterval(delay)
                if automaticSending { scheduleSend(after: delay) }
            } else {
                parkZoneChange(entry, error, into: &sent)
            }
            return
        }
        state.zoneChanges.pending.remove(at: index)
        if entry.change.isDelete {
            zoneDeleteAcknowledged(zone, sequence: entry.sequence)
            sent.deletedZones.append(zone)
        } else {
            if !state.zones.contains(zone.zoneName) { state.zones.append(zone.zoneName) }
            sent.savedZones.append(zone)
        }
    }

    private func parkZoneChange(_ entry: ZoneChangeEntry, _ error: NimbusError, into sent: inout SentChanges) {
        guard let index = state.zoneChanges.pending.firstIndex(where: { $0.sequence == entry.sequence }) else { return }
        state.zoneChanges.pending.remove(at: index)
        let failed = FailedZoneChange(change: entry.change, cause: FailedChange.Cause(error), failedAt: Date())
        state.zoneChanges.failed.append(failed)
        sent.failedZones.append(failed)
    }

    /// The server deleted the zone with its records: record changes of the zone enqueued before
    /// the delete go (their records are gone), its token is forgotten.
    private func zoneDeleteAcknowledged(_ zone: ZoneID, sequence: Int64) {
        state.outbox.removeAll { $0.recordID.zoneID == zone && $0.sequence < sequence }
        outboxPositions = nil
        state.zoneTokens[zone.zoneName] = nil
        let stillUsed = state.outbox.contains { $0.recordID.zoneID == zone } || state.zoneChanges.pending.contains { $0.change.zoneID == zone }
        if !stillUsed { state.zones.removeAll { $0 == zone.zoneName } }
    }
}
