import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// Where each device last synced each zone (`device_zone_positions`), for the console's lag.
///
/// `records/changes` notes the position it answered; nothing is written on the read's path.
/// Noted positions are kept per (token, zone), newest only, and written in one statement: at
/// once after a quiet spell, then at most once every `minimumInterval` while devices keep
/// syncing, so a busy server writes one small statement every few seconds, not one per read.
/// `flush()` writes what is pending now (the console calls it before showing positions). Writes
/// may cross (a flush beside the timed write), so a row only moves forward.
final class SyncPositionRecorder: Sendable {
    private struct Key: Hashable {
        var tokenID: String
        var zoneID: Int64
    }

    private struct Position {
        var sequence: Int64
        /// Milliseconds since 1970.
        var at: Int64
    }

    private struct State {
        var pending: [Key: Position] = [:]
        var writing = false
        var lastStart: UInt64 = 0
        /// Writes that took a batch and have not finished their statement.
        var inFlight = 0
        /// `flush` calls waiting for those writes.
        var flushWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// The least time between two writes' starts.
    static let minimumIntervalNanoseconds: UInt64 = 5_000_000_000
    /// Positions kept before the oldest are dropped unwritten (a database that is down for long).
    static let maxPending = 100_000

    private let pool: PGPool
    private let state = Lock(State())
    private let logger = Logger(subsystem: "sync-positions")

    init(pool: PGPool) {
        self.pool = pool
    }

    /// Notes that `tokenID`'s answer for zone `zoneID` reached `sequence` at `at` (wall clock, ms).
    func note(tokenID: String, zoneID: Int64, sequence: Int64, atMilliseconds at: Int64) {
        let start = state.withLock { state -> Bool in
            let key = Key(tokenID: tokenID, zoneID: zoneID)
            if let known = state.pending[key], known.sequence > sequence { return false }
            if state.pending.count >= Self.maxPending, state.pending[key] == nil { return false }
            state.pending[key] = Position(sequence: sequence, at: at)
            if state.writing { return false }
            state.writing = true
            return true
        }
        if start { Task { await self.writeLoop() } }
    }

    /// Writes everything noted so far now, waiting for a write already under way (the timed
    /// write may have taken the positions noted before this call and not yet committed them).
    func flush() async {
        await write(waitingForInterval: false)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                guard state.inFlight > 0 else { return true }
                state.flushWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func writeLoop() async {
        while await write(waitingForInterval: true) {}
    }

    /// One write of what is pending; false once nothing was (the loop then ends and the next
    /// `note` starts another).
    @discardableResult
    private func write(waitingForInterval: Bool) async -> Bool {
        if waitingForInterval {
            let since = monotonicNanoseconds() - state.withLock { $0.lastStart }
            if since < Self.minimumIntervalNanoseconds {
                try? await Task.sleep(nanoseconds: Self.minimumIntervalNanoseconds - since)
            }
        }
        let batch = state.withLock { state -> [Key: Position] in
            if state.pending.isEmpty {
                if waitingForInterval { state.writing = false }
                return [:]
            }
            defer { state.pending.removeAll(keepingCapacity: true) }
            state.lastStart = monotonicNanoseconds()
            state.inFlight += 1
            return state.pending
        }
        guard !batch.isEmpty else { return false }
        defer {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.inFlight -= 1
                guard state.inFlight == 0 else { return [] }
                defer { state.flushWaiters.removeAll() }
                return state.flushWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
        let entries = Array(batch)
        do {
            _ = try await pool.withConnection { connection in
                try connection.run("""
                    INSERT INTO device_zone_positions AS p (token_id, zone_id, change_seq, synced_at)
                    SELECT t, z, s, to_timestamp(ms / 1000.0)
                    FROM unnest(\(PGData.textArray(entries.map(\.key.tokenID))), \(PGData.int64Array(entries.map(\.key.zoneID))),
                                \(PGData.int64Array(entries.map(\.value.sequence))),
                                \(PGData.int64Array(entries.map(\.value.at)))) AS n(t, z, s, ms)
                    WHERE EXISTS (SELECT 1 FROM device_tokens d WHERE d.token_id = n.t)
                    ON CONFLICT (token_id, zone_id) DO UPDATE
                    SET change_seq = GREATEST(p.change_seq, EXCLUDED.change_seq), synced_at = GREATEST(p.synced_at, EXCLUDED.synced_at)
                    """)
            }
        } catch {
            logger.warning("could not record sync positions", ["error": "\(error)", "positions": entries.count])
        }
        return true
    }
}
