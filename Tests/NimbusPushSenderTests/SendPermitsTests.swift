import Foundation
import NimbusSupport
import Testing
@testable import NimbusPushSender

@Suite struct SendPermitsTests {
    @Test func aFreedSlotGoesToTheLongestWaiter() async {
        let permits = SendPermits(count: 1)
        #expect(await permits.acquire())
        let order = Lock<[Int]>([])
        var waiters: [Task<Void, Never>] = []
        for n in 1...3 {
            waiters.append(Task {
                #expect(await permits.acquire())
                order.withLock { $0.append(n) }
                permits.release()
            })
            // The next waiter starts once this one waits (bounded: a loaded machine may be slow to run it).
            for _ in 0..<2_000 where permits.waiters < n { try? await Task.sleep(nanoseconds: 5_000_000) }
        }
        #expect(permits.waiters == 3)
        permits.release()
        for waiter in waiters { await waiter.value }
        #expect(order.withLock { $0 } == [1, 2, 3])
        // The slot came back: one acquire succeeds at once.
        #expect(await permits.acquire())
    }

    @Test func closingEndsEveryWaitAndEveryLaterOneWithFalse() async {
        let permits = SendPermits(count: 1)
        #expect(await permits.acquire())
        let waiting = Task { await permits.acquire() }
        for _ in 0..<2_000 where permits.waiters < 1 { try? await Task.sleep(nanoseconds: 5_000_000) }
        permits.close()
        #expect(await waiting.value == false)
        #expect(await permits.acquire() == false)
    }

    @Test func theSlotsAreTheCount() async {
        let permits = SendPermits(count: 3)
        for _ in 0..<3 { #expect(await permits.acquire()) }
        let fourth = Task { await permits.acquire() }
        for _ in 0..<2_000 where permits.waiters < 1 { try? await Task.sleep(nanoseconds: 5_000_000) }
        #expect(permits.waiters == 1)
        permits.close()
        #expect(await fourth.value == false)
    }
}
