import Foundation
import Testing
@testable import NimbusPushSender

@Suite struct WakeSignalTests {
    @Test func aSignalEndsTheWaitEarly() async {
        let wake = WakeSignal()
        let start = Date()
        Task {
            try? await Task.sleep(nanoseconds: 50_000_000)
            wake.signal()
        }
        await wake.wait(milliseconds: 120_000)
        // Far below the wait's time, yet loose: a full test run can keep the pool busy for seconds.
        #expect(Date().timeIntervalSince(start) < 60)
    }

    @Test func aSignalBeforeTheWaitIsKeptOnce() async {
        let wake = WakeSignal()
        wake.signal()
        wake.signal()
        let start = Date()
        await wake.wait(milliseconds: 120_000)
        #expect(Date().timeIntervalSince(start) < 60)
        // Kept once, not twice: the next wait runs its time.
        let second = Date()
        await wake.wait(milliseconds: 200)
        #expect(Date().timeIntervalSince(second) >= 0.19)
    }

    @Test func withoutASignalTheWaitEndsAtItsTime() async {
        let wake = WakeSignal()
        let start = Date()
        await wake.wait(milliseconds: 100)
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed >= 0.09 && elapsed < 60)
    }
}
