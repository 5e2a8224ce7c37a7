import NimbusCore
import NimbusStore
import NimbusSupport

/// The answers waiting to be recorded: the send tasks add them, the sender's recorder takes all of
/// them at once (those that arrived while it recorded the previous batch), so outcomes are written
/// in batches whose size follows the answer rate, with no timer.
final class OutcomeRecorder: Sendable {
    typealias Outcome = (push: ClaimedPush, answer: PushAnswer)

    private struct State {
        var waiting: [Outcome] = []
        var claimsEnded = false
    }

    private let state = Lock(State())
    private let arrived = WakeSignal()

    /// An answer to record.
    func add(_ push: ClaimedPush, _ answer: PushAnswer) {
        state.withLock { $0.waiting.append((push, answer)) }
        arrived.signal()
    }

    /// The sender claims nothing more: `next` returns nil once nothing is in flight.
    func claimsEnded() {
        state.withLock { $0.claimsEnded = true }
        arrived.signal()
    }

    /// Something other than an answer changed what `next` waits for (a claimed push left unsent).
    func nudge() {
        arrived.signal()
    }

    /// Every answer that arrived since the last call, waiting for one when there is none; nil when
    /// the claims ended and `inFlight()` (pushes claimed and not recorded) is 0.
    func next(inFlight: () -> Int) async -> [Outcome]? {
        while true {
            let (batch, ended) = state.withLock { state -> ([Outcome], Bool) in
                defer { state.waiting.removeAll(keepingCapacity: true) }
                return (state.waiting, state.claimsEnded)
            }
            if !batch.isEmpty { return batch }
            if ended && inFlight() <= 0 { return nil }
            await arrived.wait(milliseconds: 1_000)
        }
    }
}
