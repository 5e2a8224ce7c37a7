import Foundation

extension SyncEngine {
    /// Live mode instead of push: sends enqueued changes at once, and holds one long-poll
    /// (`zones/changes` with `wait`) for the device; whenever a zone changes it fetches. A broken
    /// connection or a restarting server is retried with backoff and jitter, resuming from the
    /// saved tokens, so nothing sent meanwhile is lost. Each wait is jittered below `waitSeconds`
    /// (`jitteredWait`), so devices that parked together do not all come back together.
    public func startLive(waitSeconds: Int = 55) {
        guard liveTask == nil else { return }
        automaticSending = true
        liveTask = Task { [weak self] in
            await self?.runLive(waitSeconds: waitSeconds)
        }
        scheduleSend(after: 0)
        publishStatus()
    }

    /// Stops live mode (an outstanding long-poll is cancelled).
    public func stopLive() {
        liveTask?.cancel()
        liveTask = nil
        automaticSending = false
        retryTask?.cancel()
        retryTask = nil
        publishStatus()
    }

    private func runLive(waitSeconds: Int) async {
        var backoff = Backoff(base: 0.1, cap: 15)
        var needsFetch = true
        while !Task.isCancelled {
            do {
                if needsFetch {
                    try await fetchChanges()
                    needsFetch = false
                }
                let limits = try await database.container.limits()
                let page = try await database.databaseChanges(since: state.databaseToken,
                                                              wait: jitteredWait(min(waitSeconds, limits.maxWaitSeconds)))
                backoff.reset()
                needsFetch = !page.changedZones.isEmpty || !page.deletedZones.isEmpty || page.moreComing
                    || page.syncToken != state.databaseToken
                if hasPendingChanges && retryAt == nil { scheduleSend(after: 0) }
            } catch {
                if Task.isCancelled { return }
                let failure = error as? NimbusError ?? NimbusError(.internalError, reason: "\(error)")
                noteRequest(failure)
                needsFetch = true
                let delay = backoff.nextDelay(retryAfter: failure.retryAfter)
                do { try await Task.sleep(nanoseconds: UInt64(delay * 1e9)) } catch { return }
                // Back from a disconnect: whatever waited in the outbox goes out too.
                if hasPendingChanges { scheduleSend(after: 0) }
            }
        }
    }
}
