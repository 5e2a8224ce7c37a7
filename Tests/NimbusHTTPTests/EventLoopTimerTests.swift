import Foundation
import Glibc
import Testing
@testable import NimbusHTTP

/// The loop's deadline heap (pure) and its wake-ups on a real server: entries come out earliest
/// first, never before their time, stale ones are dropped, and a timeout fires at its deadline
/// rather than at the next periodic scan.
@Suite struct DeadlineHeapTests {
    /// Pops everything due at `now`, in order.
    func drain(_ heap: inout DeadlineHeap<Int>, now: UInt64 = .max) -> [Int] {
        var out: [Int] = []
        while let entry = heap.popDue(now: now) { out.append(entry.id) }
        return out
    }

    @Test func entriesComeOutEarliestFirstAndEqualDeadlinesInPushOrder() {
        var heap = DeadlineHeap<Int>()
        for (id, deadline) in [(1, 50), (2, 10), (3, 30), (4, 10), (5, 40), (6, 30)] { heap.push(id, at: UInt64(deadline)) }
        #expect(heap.earliest == 10)
        #expect(drain(&heap) == [2, 4, 3, 6, 5, 1])
        #expect(heap.isEmpty && heap.earliest == nil)
    }

    @Test func nothingComesOutBeforeItsDeadline() {
        var heap = DeadlineHeap<Int>()
        heap.push(1, at: 100)
        heap.push(2, at: 200)
        #expect(heap.popDue(now: 99) == nil)
        #expect(heap.popDue(now: 100)?.id == 1)
        #expect(heap.popDue(now: 199) == nil)
        #expect(heap.earliest == 200)
        #expect(heap.popDue(now: 1_000)?.id == 2)
    }

    @Test func manyEntriesComeOutSorted() {
        var generator = SystemRandomNumberGenerator()
        var heap = DeadlineHeap<Int>()
        var deadlines: [UInt64] = []
        for id in 0..<20_000 {
            let deadline = UInt64.random(in: 0..<5_000, using: &generator)
            deadlines.append(deadline)
            heap.push(id, at: deadline)
        }
        var popped: [UInt64] = []
        // Interleaved with pushes of later deadlines, as a running loop does.
        var now: UInt64 = 0
        while !heap.isEmpty {
            now += 97
            while let entry = heap.popDue(now: now) {
                #expect(entry.deadline <= now)
                popped.append(entry.deadline)
            }
            if now < 2_000 { heap.push(-1, at: now + 3_000); deadlines.append(now + 3_000) }
        }
        #expect(popped == deadlines.sorted())
    }

    /// The loop's lazy deletion: an owner keeps the one deadline it counts on with a generation;
    /// moved and cancelled timers leave entries that are dropped when popped or compacted.
    @Test func cancelledAndRescheduledTimersLeaveStaleEntriesThatAreSkipped() {
        struct Owner { var generation: UInt64; var deadline: UInt64 }
        var owners: [Int: Owner] = [:]
        var heap = DeadlineHeap<LoopTimerID>()
        func schedule(_ descriptor: Int32, generation: UInt64, at deadline: UInt64) {
            owners[Int(descriptor)] = Owner(generation: generation, deadline: deadline)
            heap.push(LoopTimerID(descriptor: descriptor, generation: generation), at: deadline)
        }
        func isLive(_ entry: DeadlineHeap<LoopTimerID>.Entry) -> Bool {
            guard let owner = owners[Int(entry.id.descriptor)] else { return false }
            return owner.generation == entry.id.generation && owner.deadline == entry.deadline
        }
        schedule(3, generation: 1, at: 100)
        schedule(3, generation: 1, at: 50)    // rescheduled earlier
        schedule(4, generation: 2, at: 70)
        owners[4] = nil                        // cancelled (closed)
        schedule(4, generation: 3, at: 80)    // the number reused by a later connection
        schedule(5, generation: 4, at: 60)
        owners[5]?.deadline = 0                // its timer stopped
        var fired: [(Int32, UInt64)] = []
        while let entry = heap.popDue(now: .max) {
            if isLive(entry) { fired.append((entry.id.descriptor, entry.id.generation)) }
        }
        #expect(fired.map(\.0) == [3, 4])
        #expect(fired.map(\.1) == [1, 3])

        // Compaction keeps only live entries, still in order.
        schedule(7, generation: 5, at: 30)
        for deadline in stride(from: UInt64(1_000), to: 2_000, by: 10) { schedule(8, generation: 6, at: deadline) }
        schedule(9, generation: 7, at: 20)
        heap.compact(keeping: isLive)
        #expect(heap.count == 3)
        var order: [Int32] = []
        while let entry = heap.popDue(now: .max) { order.append(entry.id.descriptor) }
        #expect(order == [9, 7, 8])
    }
}

@Suite struct HTTPConnectionEventsTests {
    @Test func eventsComeOutInTheOrderPostedEvenBeyondSixteen() {
        var events = HTTPConnectionEvents()
        let all: [HTTPConnectionEvent] = [.readable, .readInput, .resumeInput, .peerClosedInput, .outputDrained,
                                          .bodyConsumerResumed, .deadlinePassed, .drain, .close]
        let posted = (0..<40).map { all[($0 * 7) % all.count] }
        var popped: [HTTPConnectionEvent] = []
        for (index, event) in posted.enumerated() {
            events.append(event)
            if index % 3 == 0, let first = events.popFirst() { popped.append(first) }
        }
        while let event = events.popFirst() { popped.append(event) }
        #expect(popped == posted)
        #expect(events.isEmpty && events.popFirst() == nil)
    }
}

/// Timing over a real server: run alone by Tests/run.sh (QUIET_TESTS), bounds generous.
@Suite struct EventLoopDeadlineTests {
    let tests = HTTPServerTests()

    /// A 50 ms header timeout answers 408 no sooner than 50 ms after the connection, and — at
    /// least once in five tries — less than 100 ms after its deadline. The periodic scan this heap
    /// replaced (every 200 ms, `epoll_wait` of 250 ms) answered it 150–450 ms late.
    @Test func aHeaderTimeoutFiresAtItsDeadlineNotAtTheNextScan() async throws {
        try await tests.withServer({ $0.headerTimeoutSeconds = 0.05; $0.eventLoopCount = 1 }) { port, _ in
            let elapsed = try await tests.onOwnThread { () -> [Double] in
                var elapsed: [Double] = []
                for _ in 0..<5 {
                    let start = Date()
                    let client = try TestClient(port: port)
                    try client.send("GET / HTTP/1.1\r\nHost: x\r\n")
                    let status = try client.readResponse().status
                    elapsed.append(status == 408 ? Date().timeIntervalSince(start) : -1)
                    usleep(30_000)  // a different phase against any periodic wake-up
                }
                return elapsed
            }
            #expect(elapsed.allSatisfy { $0 >= 0.05 }, "never before the deadline: \(elapsed)")
            #expect((elapsed.min() ?? 1) < 0.15, "at its deadline, not at a later scan: \(elapsed)")
        }
    }
}
