import NimbusSupport

/// The sender's send slots: at most `count` pushes on their way to APNs at once, the claimed pushes
/// beyond that waiting here in claim order (a suspended task each, holding nothing of libcurl's).
/// Closing ends every wait, now and later, with false: the waiting pushes are not sent.
final class SendPermits: Sendable {
    private struct State {
        var available: Int
        var waiting: [CheckedContinuation<Bool, Never>] = []
        /// Index of the first waiter not yet resumed (a queue without moving the array per permit).
        var head = 0
        var closed = false
    }

    private let state: Lock<State>

    init(count: Int) {
        state = Lock(State(available: max(count, 1)))
    }

    /// Tasks waiting for a slot now.
    var waiters: Int { state.withLock { $0.waiting.count - $0.head } }

    /// Waits for a slot: true with one (give it back with `release`), false once closed.
    func acquire() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let answer = state.withLock { state -> Bool? in
                if state.closed { return false }
                guard state.available > 0 else {
                    state.waiting.append(continuation)
                    return nil
                }
                state.available -= 1
                return true
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Gives a slot back: to the longest waiter, if any.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard state.head < state.waiting.count else {
                state.available += 1
                return nil
            }
            let next = state.waiting[state.head]
            state.head += 1
            if state.head == state.waiting.count {
                state.waiting.removeAll(keepingCapacity: true)
                state.head = 0
            }
            return next
        }
        next?.resume(returning: true)
    }

    /// Ends every wait with false, and every later `acquire` at once.
    func close() {
        let waiting = state.withLock { state -> ArraySlice<CheckedContinuation<Bool, Never>> in
            state.closed = true
            defer { state.waiting.removeAll(); state.head = 0 }
            return state.waiting[state.head...]
        }
        for continuation in waiting { continuation.resume(returning: false) }
    }
}
