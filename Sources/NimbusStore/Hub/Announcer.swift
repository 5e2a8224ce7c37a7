import Foundation
import NimbusPostgres
import NimbusSupport

/// Sends committed changes to every instance's LISTEN connection, after the commit.
///
/// A `NOTIFY` inside the writing transaction makes PostgreSQL take one cluster-wide lock from
/// the notifying commit's pre-commit step until it ends (async.c, `PreCommit_Notify`), fsync
/// included: every write of every zone and every user would commit one after another (pgbench
/// here: 4.9k → 0.7–1.4k zone writes/s over 32 zones). Sent in a transaction of its own, a
/// NOTIFY holds that lock for microseconds. That transaction still gets an xid (queue entries
/// carry it) and so a commit record; it commits with `synchronous_commit` off — notifications
/// are not durable anyway, and listeners get them at commit, not at the WAL flush — so an
/// announcement costs no fsync.
///
/// Announcements are hints (waiters re-read the change feed), so they are coalesced: while one
/// `pg_notify` statement is on its way, later events queue up and go out together in the next,
/// keeping only the newest sequence per zone, and statements start at least `minimumInterval`
/// apart (the first after a quiet spell goes at once). Each is a transaction of its own: under
/// write load they had been ~2 per write statement, two thirds of the database's commits.
/// Writers do not wait for them; `flush()` does.
final class Announcer: Sendable {
    private struct Key: Hashable {
        var databaseID: Int64
        var kind: ChangeEvent.Kind
        var zoneID: Int64
    }

    /// The least time between two statements' starts (other instances' waiters wake at most
    /// this much later).
    static let minimumIntervalNanoseconds: UInt64 = 2_000_000

    private struct State {
        var pending: [Key: Int64] = [:]
        var sending = false
        var lastStart: UInt64 = 0
        var flushed: [CheckedContinuation<Void, Never>] = []
    }

    private let pool: PGPool
    private let state = Lock(State())
    private let logger = Logger(subsystem: "announcer")

    init(pool: PGPool) {
        self.pool = pool
    }

    /// Queues committed events; a sender goes out at once unless one is already on its way.
    func announce(_ events: [ChangeEvent]) {
        guard !events.isEmpty else { return }
        let start = state.withLock { state -> Bool in
            for event in events {
                let key = Key(databaseID: event.databaseID, kind: event.kind, zoneID: event.zoneID)
                state.pending[key] = max(state.pending[key] ?? .min, event.sequence)
            }
            if state.sending { return false }
            state.sending = true
            return true
        }
        if start { Task { await self.send() } }
    }

    /// Returns once everything announced so far has been sent (or given up on).
    func flush() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state -> Bool in
                if !state.sending && state.pending.isEmpty { return true }
                state.flushed.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    private func send() async {
        while true {
            let since = monotonicNanoseconds() - state.withLock { $0.lastStart }
            if since < Self.minimumIntervalNanoseconds {
                try? await Task.sleep(nanoseconds: Self.minimumIntervalNanoseconds - since)
            }
            let (batch, flushed) = state.withLock { state -> ([Key: Int64], [CheckedContinuation<Void, Never>]) in
                if state.pending.isEmpty {
                    // Done: later writers start a sender of their own, and flushers wait for it.
                    state.sending = false
                    defer { state.flushed.removeAll() }
                    return ([:], state.flushed)
                }
                defer { state.pending.removeAll(keepingCapacity: true) }
                state.lastStart = monotonicNanoseconds()
                return (state.pending, [])
            }
            guard !batch.isEmpty else {
                for continuation in flushed { continuation.resume() }
                return
            }
            let payloads = batch.map { key, sequence in
                ChangeEvent(databaseID: key.databaseID, kind: key.kind, zoneID: key.zoneID, sequence: sequence).payload
            }
            // Two tries: a broken pooled connection is replaced by the pool. If the database is
            // down, the listeners reconnect later and wake every waiter anyway.
            for attempt in 1...2 {
                do {
                    _ = try await pool.withConnection { connection in
                        try connection.run("""
                            SELECT set_config('synchronous_commit', 'off', true), count(pg_notify(\(ChangeEvent.channel), p))
                            FROM unnest(\(PGData.textArray(payloads))) AS p
                            """)
                    }
                    break
                } catch {
                    if attempt == 2 {
                        logger.warning("could not announce changes to other instances", ["error": "\(error)", "events": payloads.count])
                    }
                }
            }
        }
    }
}
