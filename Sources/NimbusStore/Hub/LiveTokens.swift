import NimbusPostgres
import NimbusSupport
import Synchronization

/// Whether device tokens are still live, asked by parked long-polls just before they deliver:
/// a revocation notice that never arrived must not let data through.
///
/// Asked after the waiter's read, the answer covers it: a token live when the check starts was
/// live when the read took its snapshot, so the read saw nothing written after the revocation.
/// One write can wake a thousand waiters at once, so questions asked while a statement runs wait
/// and go out together in the next (`token_id = ANY($1)`); each batch is one index lookup per
/// token. Every question is answered by a statement that started after it was asked.
package final class LiveTokens: Sendable {
    private struct State {
        var waiting: [String: [CheckedContinuation<Result<Bool, any Error>, Never>]] = [:]
        var checking = false
    }

    private let pool: PGPool
    private let state = Lock(State())
    private let statementsRun = Atomic<Int>(0)

    init(pool: PGPool) {
        self.pool = pool
    }

    /// Statements run so far (tests).
    package var statements: Int { statementsRun.load(ordering: .relaxed) }

    /// True while device token `tokenID` exists and is not revoked.
    package func isLive(_ tokenID: String) async throws -> Bool {
        let result: Result<Bool, any Error> = await withCheckedContinuation { continuation in
            let start = state.withLock { state -> Bool in
                state.waiting[tokenID, default: []].append(continuation)
                if state.checking { return false }
                state.checking = true
                return true
            }
            if start { Task { await self.check() } }
        }
        return try result.get()
    }

    /// Runs batches until nobody waits.
    private func check() async {
        while true {
            let batch = state.withLock { state in
                if state.waiting.isEmpty { state.checking = false }
                defer { state.waiting.removeAll() }
                return state.waiting
            }
            if batch.isEmpty { return }
            statementsRun.add(1, ordering: .relaxed)
            let result: Result<Set<String>, any Error>
            do {
                let live = try await StorePool(pool: pool).query("""
                    SELECT token_id FROM device_tokens
                    WHERE token_id = ANY(\(PGData.textArray(Array(batch.keys)))) AND revoked_at IS NULL
                    """) { try $0.string(0) }
                result = .success(Set(live))
            } catch {
                result = .failure(error)
            }
            for (tokenID, continuations) in batch {
                let answer = result.map { $0.contains(tokenID) }
                for continuation in continuations { continuation.resume(returning: answer) }
            }
        }
    }
}
