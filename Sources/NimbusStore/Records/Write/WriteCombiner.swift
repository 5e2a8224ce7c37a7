import NimbusSupport

/// Group commit in the application: concurrent writes share statements and commits.
///
/// A write whose zone has no batch in flight, arriving while fewer than `maxBatchesInFlight`
/// batches run, goes out at once on its own task — alone when nothing else waits, so an idle
/// server adds no delay. Writes arriving meanwhile queue; when a batch finishes, the queued
/// writes whose zones are idle leave together as the next batch, run by a runner task that goes
/// on from batch to batch while writes keep queueing (no thread wakes up between two batches),
/// and every member gets its outcome as its batch ends.
///
/// Batches in flight never share a zone (`key`), so one instance's batches never wait for each
/// other's row locks, and the writes of one zone keep their arrival order. One zone's writers,
/// which PostgreSQL would otherwise serialize commit by commit on the zone's row lock, share one
/// lock hold and one commit instead.
package final class WriteCombiner<Submission: Sendable, Outcome: Sendable>: Sendable {
    /// Runs one batch, its statements run as the `Execution` says (the submitter's, or the
    /// runner's `.blocking`); returns one outcome per submission, in order. Must not throw:
    /// failures are outcomes.
    package typealias Runner = @Sendable ([Submission], Execution) async -> [Outcome]

    package let maxBatchesInFlight: Int
    package let maxBatchWeight: Int
    private let key: @Sendable (Submission) -> Int64
    private let weight: @Sendable (Submission) -> Int
    private let run: Runner
    private let state = Lock(State())

    /// - Parameters:
    ///   - maxBatchesInFlight: batches running at once (fewer means larger batches under load).
    ///   - maxBatchWeight: the weight (records) a batch gathers at most; a heavier single
    ///     submission still goes, alone.
    ///   - key: the zone a submission writes; batches in flight have disjoint keys.
    package init(maxBatchesInFlight: Int, maxBatchWeight: Int, key: @escaping @Sendable (Submission) -> Int64,
                 weight: @escaping @Sendable (Submission) -> Int, run: @escaping Runner) {
        self.maxBatchesInFlight = max(1, maxBatchesInFlight)
        self.maxBatchWeight = max(1, maxBatchWeight)
        self.key = key
        self.weight = weight
        self.run = run
    }

    /// Writes `submission` in some batch and returns its outcome. `execution`: how the caller's
    /// task runs statements, for a batch it runs itself.
    package func submit(_ submission: Submission, on execution: Execution = .offloaded) async -> Outcome {
        let slot = Slot()
        let entry = Entry(key: key(submission), weight: weight(submission), submission: submission, slot: slot)
        let batches = state.withLock { state in
            state.pending.append(entry)
            return Self.dispatch(&state, maxBatchesInFlight: maxBatchesInFlight, maxBatchWeight: maxBatchWeight)
        }
        var mine: [Entry]?
        for batch in batches {
            if batch.contains(where: { $0.slot === slot }) { mine = batch } else { continueInRunner(batch) }
        }
        guard let batch = mine else { return await slot.wait() }
        // The combiner was idle for this zone: the batch runs on this request's own task, with
        // no hop to another thread. What queued meanwhile goes on in a runner task, which takes
        // batch after batch without waking anyone in between, while this request answers.
        let outcomes = await execute(batch, execution)
        if let next = finish(batch) { continueInRunner(next) }
        var own: Outcome?
        for (entry, outcome) in zip(batch, outcomes) {
            if entry.slot === slot { own = outcome } else { entry.slot.fulfill(outcome) }
        }
        guard let own else { preconditionFailure("the submitting request is a member of the batch it runs") }
        return own
    }

    /// Statistics for tests and metrics: batches run, submissions they carried, and the time
    /// spent running them.
    package var counts: (batches: Int, submissions: Int, runSeconds: Double) {
        state.withLock { ($0.batchesRun, $0.submissionsRun, Double($0.runNanoseconds) / 1e9) }
    }

    /// Runs `first` and then every batch that is ready when the previous one finishes, on a
    /// task of its own, until nothing is queued.
    private func continueInRunner(_ first: [Entry]) {
        // On a thread of its own that may block, not on an event loop: the batches are the
        // zone's critical path, and a loop busy with other connections would answer the
        // database late (measured: batches 1.1 → 1.5 ms on a loop).
        Task(executorPreference: BlockingExecutor.shared) {
            var batch = first
            while true {
                let outcomes = await self.execute(batch, .blocking)
                let next = self.finish(batch)
                for (entry, outcome) in zip(batch, outcomes) { entry.slot.fulfill(outcome) }
                guard let next else { return }
                batch = next
            }
        }
    }

    private func execute(_ batch: [Entry], _ execution: Execution) async -> [Outcome] {
        let started = monotonicNanoseconds()
        let outcomes = await run(batch.map(\.submission), execution)
        let elapsed = monotonicNanoseconds() - started
        precondition(outcomes.count == batch.count, "a WriteCombiner runner returned \(outcomes.count) outcomes for \(batch.count) submissions")
        state.withLock { state in
            state.batchesRun += 1
            state.submissionsRun += batch.count
            state.runNanoseconds += elapsed
        }
        return outcomes
    }

    /// Frees a finished batch's zones and, keeping its place among the batches in flight,
    /// forms the next batch from what is queued; nil (and the place given up) when nothing is.
    private func finish(_ batch: [Entry]) -> [Entry]? {
        state.withLock { state in
            for entry in batch { state.busy.remove(entry.key) }
            state.inFlight -= 1
            let next = Self.dispatch(&state, maxBatchesInFlight: state.inFlight + 1, maxBatchWeight: maxBatchWeight)
            return next.first
        }
    }

    /// Forms the batches that may start now (under the lock): the queued submissions whose zones
    /// are idle, in arrival order, up to the weight limit; a zone skipped once is skipped for the
    /// rest of the pass so its writes stay in order.
    private static func dispatch(_ state: inout State, maxBatchesInFlight: Int, maxBatchWeight: Int) -> [[Entry]] {
        var batches: [[Entry]] = []
        while state.inFlight < maxBatchesInFlight, !state.pending.isEmpty {
            var batch: [Entry] = []
            var remaining: [Entry] = []
            var skipped = Set<Int64>()
            var weight = 0
            for entry in state.pending {
                let fits = batch.isEmpty || weight + entry.weight <= maxBatchWeight
                if state.busy.contains(entry.key) || skipped.contains(entry.key) || !fits {
                    skipped.insert(entry.key)
                    remaining.append(entry)
                } else {
                    batch.append(entry)
                    weight += entry.weight
                }
            }
            guard !batch.isEmpty else { break }
            state.pending = remaining
            for entry in batch { state.busy.insert(entry.key) }
            state.inFlight += 1
            batches.append(batch)
        }
        return batches
    }

    private struct Entry: Sendable {
        let key: Int64
        let weight: Int
        let submission: Submission
        let slot: Slot
    }

    private struct State {
        var pending: [Entry] = []
        var busy: Set<Int64> = []
        var inFlight = 0
        var batchesRun = 0
        var submissionsRun = 0
        var runNanoseconds: UInt64 = 0
    }

    /// Where a queued submission waits for its outcome; `fulfill` may come before `wait`.
    private final class Slot: Sendable {
        private let state = Lock<(waiter: CheckedContinuation<Outcome, Never>?, outcome: Outcome?)>((nil, nil))

        func wait() async -> Outcome {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Outcome? in
                    if let outcome = state.outcome { return outcome }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }

        func fulfill(_ outcome: Outcome) {
            let waiter = state.withLock { state -> CheckedContinuation<Outcome, Never>? in
                if let waiter = state.waiter { return waiter }
                state.outcome = outcome
                return nil
            }
            waiter?.resume(returning: outcome)
        }
    }
}
