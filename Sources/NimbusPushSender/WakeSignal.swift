import Dispatch
import NimbusSupport

/// A sleep that a signal ends early: the sender's wait between claims. A signal while nobody
/// waits is remembered (once), so a notification written just before the sleep is not missed.
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
        /// The running wait's timer (on Dispatch: it fires even when the cooperative pool is
        /// busy), cancelled when a signal ends the wait first.
        var timer: DispatchWorkItem?
        var generation: UInt64 = 0
    }

    private let state = Lock(State())

    /// Ends the current wait, or the next one if none is running.
    func signal() {
        let woken = state.withLock { state -> (CheckedContinuation<Void, Never>, DispatchWorkItem?)? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            defer { state.waiter = nil; state.timer = nil }
            return (waiter, state.timer)
        }
        woken?.1?.cancel()
        woken?.0.resume()
    }

    /// Returns after `milliseconds`, or at once when signalled meanwhile (or before).
    func wait(milliseconds: Int64) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let generation = state.withLock { state -> UInt64? in
                if state.pending {
                    state.pending = false
                    return nil
                }
                state.generation &+= 1
                state.waiter = continuation
                return state.generation
            }
            guard let generation else { return continuation.resume() }
            let timer = DispatchWorkItem { self.timeOut(generation) }
            // A signal may have come between the two locks: then the timer is not needed.
            let stale = state.withLock { state -> Bool in
                guard state.generation == generation, state.waiter != nil else { return true }
                state.timer = timer
                return false
            }
            if !stale { DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(clamping: max(milliseconds, 0))), execute: timer) }
        }
    }

    private func timeOut(_ generation: UInt64) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.generation == generation, let waiter = state.waiter else { return nil }
            state.waiter = nil
            state.timer = nil
            return waiter
        }
        waiter?.resume()
    }
}
