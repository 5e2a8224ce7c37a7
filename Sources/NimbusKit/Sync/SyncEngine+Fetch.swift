import Foundation

extension SyncEngine {
    /// Fetches every change since the saved tokens (or those of `zones` only): which zones changed
    /// (`zones/changes`), then each changed zone's records page by page. The assets of each page's
    /// records are downloaded into the asset cache first (their `fileURL` is a local file), then
    /// the page goes to the delegate, and the zone's token is saved only after the delegate
    /// applied it (synced to the disk at the zone's last page). No delegate (the engine does not
    /// retain it: the app must) or a delegate that throws: the fetch throws and no token moves
    /// past what the delegate applied. `CHANGE_TOKEN_EXPIRED` resets
    /// the zone: it is fetched again from the start and the delegate learns which local records
    /// the server no longer has. Concurrent calls run one after another (a call made while a
    /// fetch runs starts a new one after it, so it sees everything committed before the call).
    public func fetchChanges(in zones: Set<ZoneID>? = nil) async throws {
        try await fetchChanges(scope: zones.map { .zones($0) } ?? .all)
    }

    /// Fetches the changes of the zones in `scope` (see `fetchChanges(in:)`). `allExcluding` lists
    /// the changed zones and skips the excluded ones; the database token then stays where it was,
    /// so that the next fetch still lists them. `records` fetches the zones holding them.
    public func fetchChanges(scope: SyncScope) async throws {
        // Chained, not polled: a loop awaiting the running task could spin on the actor once that
        // task had ended but its caller had not yet cleared it (two overlapping calls never ended).
        let previous = fetchInProgress
        let task = Task {
            _ = try? await previous?.value
            try await self.fetchOnce(scope)
        }
        fetchInProgress = task
        defer { if fetchInProgress == task { fetchInProgress = nil } }
        try await task.value
    }

    /// The delegate for one fetch, held strongly until the fetch ends; none is an error.
    private func requireDelegate() throws -> any SyncEngineDelegate {
        guard let delegate else {
            throw NimbusError(.invalidArguments, reason: "The sync engine has no delegate: it does not retain its delegate, and the "
                + "one it was given was released. Keep a strong reference to it for the engine's life; nothing was fetched and no "
                + "token moved.")
        }
        return delegate
    }

    private func fetchOnce(_ scope: SyncScope) async throws {
        do {
            let delegate = try requireDelegate()
            var only: Set<ZoneID>?
            switch scope {
            case .all, .allExcluding: only = nil
            case .zones(let zones): only = zones
            case .records(let ids): only = Set(ids.map(\.zoneID))
            }
            if let only {
                for zone in only.sorted(by: { $0.zoneName < $1.zoneName }) {
                    if !state.zones.contains(zone.zoneName) { state.zones.append(zone.zoneName) }
                    try await fetchZone(zone, delegate: delegate)
                }
            } else {
                let (changed, deleted, databaseToken) = try await changedZones()
                for zone in deleted where scope.contains(zone: zone) { try await zoneWasDeleted(zone, delegate: delegate) }
                for zone in changed where scope.contains(zone: zone) { try await fetchZone(zone, delegate: delegate) }
                // A skipped zone must be listed again next time.
                if (changed + deleted).allSatisfy({ scope.contains(zone: $0) }) { state.databaseToken = databaseToken }
            }
            state.lastSync = Date()
            try persist()
            noteRequest(nil)
        } catch let error as NimbusError {
            noteRequest(error)
            throw error
        }
    }

    /// Zones changed since the database token, plus known zones never fetched.
    private func changedZones() async throws -> (changed: [ZoneID], deleted: [ZoneID], token: SyncToken?) {
        var token = state.databaseToken
        var changed: [ZoneID] = []
        var deleted: [ZoneID] = []
        while true {
            let page: DatabaseChanges
            do {
                page = try await database.databaseChanges(since: token)
            } catch let error as NimbusError where error.code == .changeTokenExpired && token != nil {
                token = nil  // every zone is listed again from no token
                continue
            }
            for zone in page.changedZones where !changed.contains(zone) { changed.append(zone) }
            for zone in page.deletedZones where !deleted.contains(zone) { deleted.append(zone) }
            token = page.syncToken
            if !page.moreComing { break }
        }
        for name in state.zones where state.zoneTokens[name] == nil {
            let zone = ZoneID(name)
            if !changed.contains(zone) && !deleted.contains(zone) { changed.append(zone) }
        }
        for zone in changed where !state.zones.contains(zone.zoneName) { state.zones.append(zone.zoneName) }
        return (changed, deleted, token)
    }

    private func fetchZone(_ zone: ZoneID, delegate: any SyncEngineDelegate) async throws {
        var token = state.zoneTokens[zone.zoneName]
        // After a reset: every record the server has, to tell which local ones are gone.
        var seen: Set<RecordID>? = nil
        var local: Set<RecordID> = []
        let limits = try await database.container.limits()
        // Pages are fetched and decoded ahead (ChangesPipeline): page N+1 is asked for as soon as
        // page N's bytes name its token, and decoded and opened while page N is applied and saved
        // here. At most one page decoded and one fetched ahead; a guess the decoded page contradicts
        // is dropped and the page asked again; a page's error is thrown when that page is due.
        var pipeline = pages(of: zone, from: token, resultsLimit: limits.maxResultsLimit)
        defer { pipeline.cancel() }
        while true {
            let page: ZoneChanges
            do {
                page = try await pipeline.next()
            } catch let error as NimbusError where error.code == .changeTokenExpired {
                local = await delegate.syncEngine(self, localRecordIDsIn: zone).union(knownRecordIDs(in: zone))
                seen = []
                token = nil
                pipeline.cancel()
                pipeline = pages(of: zone, from: nil, resultsLimit: limits.maxResultsLimit)
                continue
            } catch let error as NimbusError where error.code == .zoneNotFound {
                // A zone this engine never fetched is one the server has not made yet (the app's
                // own zone, its changes still queued, which make it when sent): nothing of it
                // was deleted, and the app's local records stay.
                if state.zoneTokens[zone.zoneName] == nil && token == nil { return }
                try await zoneWasDeleted(zone, delegate: delegate)
                return
            }
            if seen != nil {
                seen?.formUnion(page.modified.map(\.id))
                seen?.subtract(page.deleted.map(\.id))
            }
            if !page.modified.isEmpty || !page.deleted.isEmpty || !page.unreadable.isEmpty {
                // The app gets records whose assets are local files already (CloudKit's contract).
                // A record whose encrypted asset does not open here is unreadable, as one whose field does not.
                let (modified, unopened) = try await database.openingAssets(of: page.modified)
                try await delegate.syncEngine(self, apply: FetchedChanges(
                    zoneID: zone, modified: modified, deleted: page.deleted.map(\.id), reason: .changes, unreadable: page.unreadable + unopened))
                noteKnown(in: zone, added: page.modified.map(\.id) + page.unreadable.map(\.recordID), removed: page.deleted.map(\.id))
            }
            token = page.syncToken
            if !page.moreComing { break }
            // A reset's intermediate tokens are not saved: a crash mid-reset resets again. The
            // others are written (a killed process keeps them) but not synced: a power cut can
            // only take the zone back a few pages, which are fetched and applied again; the
            // zone's last token is synced (one fdatasync per zone, not per page: they were a
            // quarter of a first sync's time).
            if seen == nil { try saveZoneToken(page.syncToken, for: zone, durable: false) }
        }
        if let seen {
            let gone = local.subtracting(seen)
            try await delegate.syncEngine(self, apply: FetchedChanges(
                zoneID: zone, modified: [], deleted: gone.sorted { $0.recordName < $1.recordName }, reason: .tokenReset))
            noteKnown(in: zone, added: [], removed: Array(gone))
        }
        if let token { try saveZoneToken(token, for: zone) }
    }

    /// The pages of `zone` after `token`, fetched and decoded ahead of the caller (off the actor).
    private func pages(of zone: ZoneID, from token: SyncToken?, resultsLimit: Int) -> ChangesPipeline {
        let database = database
        return ChangesPipeline(from: token,
                               fetch: { try await database.changesAnswer(in: zone, since: $0, resultsLimit: resultsLimit) },
                               decode: { try await database.decodeChanges($0, zone: zone) })
    }

    private func saveZoneToken(_ token: SyncToken, for zone: ZoneID, durable: Bool = true) throws {
        state.zoneTokens[zone.zoneName] = token
        try persist(durable: durable)
    }

    private func zoneWasDeleted(_ zone: ZoneID, delegate: any SyncEngineDelegate) async throws {
        let local = await delegate.syncEngine(self, localRecordIDsIn: zone).union(knownRecordIDs(in: zone))
        try await delegate.syncEngine(self, apply: FetchedChanges(
            zoneID: zone, modified: [], deleted: local.sorted { $0.recordName < $1.recordName }, reason: .zoneDeleted))
        state.zoneTokens[zone.zoneName] = nil
        forgetKnown(zone)
        // Pending changes of the zone recreate it when they are sent (ZONE_NOT_FOUND recovery).
        if !state.outbox.contains(where: { $0.recordID.zoneID == zone })
            && !state.zoneChanges.pending.contains(where: { $0.change.zoneID == zone }) {
            state.zones.removeAll { $0 == zone.zoneName }
        }
        try persist()
    }
}
