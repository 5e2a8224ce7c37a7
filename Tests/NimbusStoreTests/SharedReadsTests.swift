import NimbusStore
import Synchronization
import Testing

/// Waiters woken alike share one re-read, but only one that started after their wake-up.
@Suite(.timeLimit(.minutes(1))) struct SharedReadsTests {
    /// A read that waits until released, counting how often it ran.
    final class GatedRead: Sendable {
        let runs = Atomic<Int>(0)
        let started = Atomic<Int>(0)
        let released = Atomic<Bool>(false)
        let answer: [UInt8]

        init(_ answer: [UInt8]) { self.answer = answer }

        func run() async throws -> [UInt8]? {
            runs.add(1, ordering: .relaxed)
            started.add(1, ordering: .relaxed)
            while !released.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(1)) }
            return answer
        }

        func waitUntilStarted(_ count: Int) async throws {
            while started.load(ordering: .relaxed) < count { try await Task.sleep(for: .milliseconds(1)) }
        }
    }

    @Test func callersWokenBeforeTheReadStartedShareIt() async throws {
        let reads = SharedReads(), gate = GatedRead([1, 2, 3])
        let leader = Task { try await reads.read("zone-7|token-a", notBefore: 5, current: 5) { try await gate.run() } }
        try await gate.waitUntilStarted(1)
        let joiners = (0..<20).map { _ in
            Task { try await reads.read("zone-7|token-a", notBefore: 5, current: 6) { try await gate.run() } }
        }
        while reads.sharedCount < 20 { try await Task.sleep(for: .milliseconds(1)) }
        gate.released.store(true, ordering: .relaxed)
        #expect(try await leader.value == [1, 2, 3])
        for joiner in joiners { #expect(try await joiner.value == [1, 2, 3]) }
        #expect(gate.runs.load(ordering: .relaxed) == 1, "one read for 21 callers")
    }

    @Test func aCallerWokenAfterTheReadStartedReadsAgain() async throws {
        let reads = SharedReads(), gate = GatedRead([9])
        let leader = Task { try await reads.read("k", notBefore: 3, current: 3) { try await gate.run() } }
        try await gate.waitUntilStarted(1)
        // Woken by wake-up 4: the running read (started at 3) may not see that commit.
        let later = Task { try await reads.read("k", notBefore: 4, current: 4) { try await gate.run() } }
        try await gate.waitUntilStarted(2)
        // Another key never shares either.
        let other = Task { try await reads.read("other", notBefore: 1, current: 4) { try await gate.run() } }
        try await gate.waitUntilStarted(3)
        gate.released.store(true, ordering: .relaxed)
        _ = try await (leader.value, later.value, other.value)
        #expect(gate.runs.load(ordering: .relaxed) == 3)
        #expect(reads.sharedCount == 0)
    }

    @Test func aFailedReadFailsEveryCallerThatSharedIt() async throws {
        struct ReadFailed: Error {}
        let reads = SharedReads(), gate = GatedRead([])
        let leader = Task { try await reads.read("k", notBefore: 1, current: 1) { _ = try await gate.run(); throw ReadFailed() } }
        try await gate.waitUntilStarted(1)
        let joiner = Task { try await reads.read("k", notBefore: 1, current: 1) { try await gate.run() } }
        while reads.sharedCount < 1 { try await Task.sleep(for: .milliseconds(1)) }
        gate.released.store(true, ordering: .relaxed)
        await #expect(throws: ReadFailed.self) { try await leader.value }
        await #expect(throws: ReadFailed.self) { try await joiner.value }
        // Nothing is left behind: the next caller runs its own read.
        #expect(try await reads.read("k", notBefore: 1, current: 1) { [7] } == [7])
    }
}
