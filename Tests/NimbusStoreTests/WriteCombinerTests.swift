import NimbusTestSupport
import Foundation
@testable import NimbusStore
import NimbusSupport
import Testing

/// The batching rules of `WriteCombiner`, with a runner that only records what it was given.
@Suite struct WriteCombinerTests {
    /// Records the batches a runner saw and whether two in flight ever shared a key.
    final class Recorder: Sendable {
        struct State {
            var batches: [[Int]] = []
            var inFlightKeys: Set<Int64> = []
            var inFlight = 0
            var maxInFlight = 0
            var sharedKeys = false
        }
        let state = Lock(State())
    }

    struct Write: Sendable {
        var id: Int
        var zone: Int64
        var records: Int = 1
    }

    static func combiner(_ recorder: Recorder, batches: Int, weight: Int = 1_000,
                         delayMilliseconds: UInt64 = 0) -> WriteCombiner<Write, Int> {
        WriteCombiner(maxBatchesInFlight: batches, maxBatchWeight: weight, key: { $0.zone }, weight: { $0.records }) { batch, _ in
            let keys = Set(batch.map(\.zone))
            recorder.state.withLock { state in
                if !state.inFlightKeys.isDisjoint(with: keys) { state.sharedKeys = true }
                state.inFlightKeys.formUnion(keys)
                state.inFlight += 1
                state.maxInFlight = max(state.maxInFlight, state.inFlight)
                state.batches.append(batch.map(\.id))
            }
            if delayMilliseconds > 0 { try? await Task.sleep(nanoseconds: delayMilliseconds * 1_000_000) }
            recorder.state.withLock { state in
                state.inFlightKeys.subtract(keys)
                state.inFlight -= 1
            }
            return batch.map { $0.id * 10 }
        }
    }

    @Test func anIdleCombinerRunsAWriteAloneAtOnce() async {
        let recorder = Recorder()
        let combiner = Self.combiner(recorder, batches: 2)
        #expect(await combiner.submit(Write(id: 7, zone: 1)) == 70)
        #expect(recorder.state.withLock { $0.batches } == [[7]])
        #expect(combiner.counts.batches == 1 && combiner.counts.submissions == 1)
    }

    @Test func concurrentWritesShareBatchesAndEachGetsItsOwnOutcome() async {
        let recorder = Recorder()
        let combiner = Self.combiner(recorder, batches: 2, delayMilliseconds: 20)
        let outcomes = await withTaskGroup(of: (Int, Int).self) { group in
            for id in 1...60 {
                group.addTask { (id, await combiner.submit(Write(id: id, zone: Int64(id % 3)))) }
            }
            var outcomes: [Int: Int] = [:]
            for await (id, outcome) in group { outcomes[id] = outcome }
            return outcomes
        }
        #expect(outcomes.count == 60)
        #expect(outcomes.allSatisfy { $0.value == $0.key * 10 })
        let state = recorder.state.withLock { $0 }
        #expect(!state.sharedKeys, "two batches in flight wrote the same zone")
        #expect(state.maxInFlight <= 2)
        #expect(state.batches.flatMap { $0 }.sorted() == Array(1...60), "every write ran exactly once")
        // 60 writers and 20 ms per batch: most writes waited and shared a batch.
        #expect(state.batches.count < 30, "batches: \(state.batches.count)")
        #expect(combiner.counts.submissions == 60)
    }

    @Test func oneZoneRunsOneBatchAtATimeEvenWithFreeSlots() async {
        let recorder = Recorder()
        let combiner = Self.combiner(recorder, batches: 8, delayMilliseconds: 10)
        await withTaskGroup(of: Void.self) { group in
            for id in 1...20 { group.addTask { _ = await combiner.submit(Write(id: id, zone: 42)) } }
        }
        let state = recorder.state.withLock { $0 }
        #expect(state.maxInFlight == 1)
        #expect(!state.sharedKeys)
        #expect(state.batches.flatMap { $0 }.count == 20)
    }

    @Test func batchesStayWithinTheWeightLimitButAHeavyWriteStillGoes() async {
        let recorder = Recorder()
        let combiner = Self.combiner(recorder, batches: 1, weight: 10, delayMilliseconds: 10)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = await combiner.submit(Write(id: 0, zone: 1, records: 50)) }  // over the limit alone
            for id in 1...12 { group.addTask { _ = await combiner.submit(Write(id: id, zone: Int64(id), records: 4)) } }
        }
        let state = recorder.state.withLock { $0 }
        #expect(state.batches.flatMap { $0 }.sorted() == Array(0...12))
        for batch in state.batches where !batch.contains(0) {
            #expect(batch.count * 4 <= 10, "batch \(batch) is over the weight limit")
        }
        #expect(state.batches.contains([0]), "the heavy write went alone")
    }
}
