import NimbusSupport

/// Reads that waiters woken by the same commits would run alike, run once.
///
/// When one write wakes a thousand waiters of a zone at the same position, each would read the
/// same page: they share one read instead. A read is shared only with callers it can answer for:
/// it started (took its snapshot) after every wake-up the caller was woken by, so it sees every
/// commit they were woken for. Wake-ups are numbered (`ChangeHub.wakeGeneration`), and a read
/// records the number current when it started.
package final class SharedReads: Sendable {
    package typealias Answer = [UInt8]?

    /// What a caller of `read` is told: run the read itself, or here is the shared one's result.
    private enum Turn {
        case lead(UInt64)
        case answered(Result<Answer, any Error>)
    }

    private struct Flight {
        let id: UInt64
        /// The wake generation when the read started: it sees every commit announced up to it.
        let generation: UInt64
        var joiners: [CheckedContinuation<Turn, Never>] = []
    }

    private struct State {
        var flights: [String: [Flight]] = [:]
        var nextID: UInt64 = 0
        var shared = 0
    }

    private let state = Lock(State())

    package init() {}

    /// Reads joined instead of run (metrics, tests).
    package var sharedCount: Int { state.withLock { $0.shared } }

    /// Runs `read`, or waits for a read with the same `key` that started at or after `generation`
    /// and answers with its result. `current` is the wake generation now.
    package func read(_ key: String, notBefore generation: UInt64, current: UInt64,
                      _ read: @Sendable () async throws -> Answer) async throws -> Answer {
        let turn: Turn = await withCheckedContinuation { continuation in
            let lead: UInt64? = state.withLock { state in
                if let index = state.flights[key]?.firstIndex(where: { $0.generation >= generation }) {
                    state.flights[key]?[index].joiners.append(continuation)
                    state.shared += 1
                    return nil
                }
                state.nextID += 1
                state.flights[key, default: []].append(Flight(id: state.nextID, generation: current))
                return state.nextID
            }
            if let lead { continuation.resume(returning: .lead(lead)) }
        }
        let id: UInt64
        switch turn {
        case .answered(let result): return try result.get()
        case .lead(let lead): id = lead
        }
        let result: Result<Answer, any Error>
        do {
            result = .success(try await read())
        } catch {
            result = .failure(error)
        }
        let joiners = state.withLock { state -> [CheckedContinuation<Turn, Never>] in
            guard let index = state.flights[key]?.firstIndex(where: { $0.id == id }) else { return [] }
            let flight = state.flights[key]?.remove(at: index)
            if state.flights[key]?.isEmpty == true { state.flights[key] = nil }
            return flight?.joiners ?? []
        }
        for joiner in joiners { joiner.resume(returning: .answered(result)) }
        return try result.get()
    }
}
