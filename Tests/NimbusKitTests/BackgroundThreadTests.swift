import Foundation
import Testing
@testable import NimbusKit

/// `BackgroundThread`: the decoding thread runs what it is handed in order, at its lower priority,
/// hands back results and errors, and skips work whose task was cancelled before it started.
@Suite("The decoding thread: order, priority, errors, cancellation")
struct BackgroundThreadTests {
    struct Refused: Error, Equatable {}

    /// A thread of the test's own (the shared one decodes other suites' pages meanwhile).
    let thread = BackgroundThread(name: "test", niceness: BackgroundThread.decodingNiceness)

    /// Holds the thread until `release` is signalled; returns once it has started.
    func holdThread(_ release: DispatchSemaphore) async -> Task<Void, any Error> {
        let started = Locked(false)
        let holding = Task { try await thread.run { started.withLock { $0 = true }; release.wait() } }
        while !started.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(1)) }
        return holding
    }

    /// Waits until `count` pieces of work are handed in behind the held one.
    func waitUntilWaiting(_ count: Int) async {
        while thread.waiting < count { try? await Task.sleep(for: .milliseconds(1)) }
    }

    @Test func workRunsInTheOrderItWasHandedInAndItsResultsAndErrorsComeBack() async throws {
        let release = DispatchSemaphore(value: 0)
        let holding = await holdThread(release)
        let order = Locked<[Int]>([])
        var tasks: [Task<Int, any Error>] = []
        for index in 0..<20 {
            tasks.append(Task { try await thread.run { order.withLock { $0.append(index) }; return index * 2 } })
            await waitUntilWaiting(index + 1)
        }
        release.signal()
        try await holding.value
        var results: [Int] = []
        for task in tasks { results.append(try await task.value) }
        #expect(results == (0..<20).map { $0 * 2 })
        #expect(order.withLock { $0 } == Array(0..<20))
        await #expect(throws: Refused.self) { try await thread.run { () throws -> Int in throw Refused() } }
    }

    @Test func theDecodingThreadRunsBelowTheCallersPriority() async throws {
        #if os(Linux)
        let inside = try await BackgroundThread.decoding.run { getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) }
        #expect(inside == BackgroundThread.decodingNiceness)
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == 0)  // the caller's thread kept its own
        #endif
    }

    @Test func workWhoseTaskIsCancelledBeforeItStartsIsSkipped() async throws {
        let release = DispatchSemaphore(value: 0)
        let holding = await holdThread(release)
        let ran = Locked(false)
        let skipped = Task { try await thread.run { ran.withLock { $0 = true } } }
        await waitUntilWaiting(1)
        skipped.cancel()
        release.signal()
        try await holding.value
        await #expect(throws: CancellationError.self) { try await skipped.value }
        #expect(ran.withLock { $0 } == false)
        // The thread goes on with later work.
        #expect(try await thread.run { 7 } == 7)
    }
}
