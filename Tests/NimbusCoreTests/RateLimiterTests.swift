import NimbusCore
import Synchronization
import Testing

/// A clock the test moves by hand (nanoseconds).
final class ManualClock: Sendable {
    private let now = Mutex<UInt64>(1_000_000_000_000)

    func advance(milliseconds: UInt64) { now.withLock { $0 += milliseconds * 1_000_000 } }
    func advance(nanoseconds: UInt64) { now.withLock { $0 += nanoseconds } }
    var read: @Sendable () -> UInt64 { { [self] in now.withLock { $0 } } }
}

@Suite struct RateLimiterTests {
    let alice = RateLimiter.Key(digest: Array(repeating: 0xA1, count: 32))
    let bob = RateLimiter.Key(digest: Array(repeating: 0xB0, count: 32))

    func allowedCount(_ limiter: RateLimiter, _ key: RateLimiter.Key, attempts: Int) -> Int {
        (0..<attempts).filter { _ in limiter.acquire(key) == .allowed }.count
    }

    @Test func exactlyTheBurstPassesAtOnceAndTheNextIsRefused() {
        let clock = ManualClock()
        let limiter = RateLimiter(requestsPerSecond: 10, burst: 5, clock: clock.read)
        for _ in 0..<5 { #expect(limiter.acquire(alice) == .allowed) }
        let refused = limiter.acquire(alice)
        // The 6th waits one interval (100 ms): Retry-After rounds that up to 1 s.
        #expect(refused == .throttled(retryAfterNanoseconds: 100_000_000))
        #expect(refused.retryAfterSeconds == 1)
        #expect(limiter.acquire(alice) != .allowed)
    }

    @Test func oneRequestComesBackPerIntervalNotEarlier() {
        let clock = ManualClock()
        let limiter = RateLimiter(requestsPerSecond: 10, burst: 5, clock: clock.read)
        #expect(allowedCount(limiter, alice, attempts: 6) == 5)
        clock.advance(nanoseconds: 99_999_999)
        #expect(limiter.acquire(alice) == .throttled(retryAfterNanoseconds: 1))
        clock.advance(nanoseconds: 1)
        #expect(limiter.acquire(alice) == .allowed)
        #expect(limiter.acquire(alice) != .allowed)
        // Half a second later: five more, not six.
        clock.advance(milliseconds: 500)
        #expect(allowedCount(limiter, alice, attempts: 10) == 5)
    }

    @Test func theSustainedRateIsTheConfiguredOne() {
        let clock = ManualClock()
        let limiter = RateLimiter(requestsPerSecond: 50, burst: 10, clock: clock.read)
        var allowed = 0
        // 10 s of a client trying every millisecond: the burst plus 50 per second.
        for _ in 0..<10_000 {
            if limiter.acquire(alice) == .allowed { allowed += 1 }
            clock.advance(milliseconds: 1)
        }
        #expect(allowed == 10 + 50 * 10 || allowed == 10 + 50 * 10 - 1)
    }

    @Test func anIdleKeyRefillsOnlyUpToTheBurst() {
        let clock = ManualClock()
        let limiter = RateLimiter(requestsPerSecond: 10, burst: 3, clock: clock.read)
        #expect(allowedCount(limiter, alice, attempts: 3) == 3)
        clock.advance(milliseconds: 60_000)
        #expect(allowedCount(limiter, alice, attempts: 10) == 3)
    }

    @Test func keysAreIndependent() {
        let clock = ManualClock()
        let limiter = RateLimiter(requestsPerSecond: 1, burst: 2, clock: clock.read)
        #expect(allowedCount(limiter, alice, attempts: 100) == 2)
        #expect(allowedCount(limiter, bob, attempts: 3) == 2)
    }

    @Test func longWaitsRoundUpToWholeSeconds() {
        let clock = ManualClock()
        let limiter = RateLimiter(requestsPerSecond: 1, burst: 1, clock: clock.read)
        #expect(limiter.acquire(alice) == .allowed)
        #expect(limiter.acquire(alice).retryAfterSeconds == 1)
        clock.advance(milliseconds: 1)
        #expect(limiter.acquire(alice) == .throttled(retryAfterNanoseconds: 999_000_000))
        let slow = RateLimiter(requestsPerSecond: 1, burst: 1, clock: clock.read)
        #expect(slow.acquire(bob) == .allowed)
        #expect(RateLimiter.Decision.throttled(retryAfterNanoseconds: 2_000_000_001).retryAfterSeconds == 3)
        #expect(RateLimiter.Decision.allowed.retryAfterSeconds == nil)
    }

    @Test func extremeSettingsNeitherOverflowNorBlock() {
        let clock = ManualClock()
        let huge = RateLimiter(requestsPerSecond: 1, burst: Int.max, clock: clock.read)
        #expect(allowedCount(huge, alice, attempts: 1000) == 1000)
        let fast = RateLimiter(requestsPerSecond: Int.max, burst: 1, clock: clock.read)
        #expect(allowedCount(fast, alice, attempts: 1000) == 1000)
        let negative = RateLimiter(requestsPerSecond: -5, burst: -5, clock: clock.read)
        #expect(!negative.isEnabled)
        let zeroBurst = RateLimiter(requestsPerSecond: 1, burst: 0, clock: clock.read)
        #expect(allowedCount(zeroBurst, alice, attempts: 3) == 1)
    }

    @Test func aZeroRateTurnsTheLimitOff() {
        let limiter = RateLimiter(requestsPerSecond: 0, burst: 1)
        #expect(!limiter.isEnabled)
        #expect(allowedCount(limiter, alice, attempts: 1000) == 1000)
        #expect(limiter.trackedKeys == 0)
    }

    @Test func theTableStaysBoundedUnderManyKeys() {
        let clock = ManualClock()
        let limiter = RateLimiter(requestsPerSecond: 1, burst: 1, shardCount: 4, maxEntriesPerShard: 16, clock: clock.read)
        for index in 0..<10_000 {
            let bytes = withUnsafeBytes(of: UInt64(index).bigEndian) { Array($0) } + withUnsafeBytes(of: UInt64(index * 7919).bigEndian) { Array($0) }
            #expect(limiter.acquire(RateLimiter.Key(digest: bytes)) == .allowed)
        }
        #expect(limiter.trackedKeys <= 4 * 16)
        // Keys whose buckets refilled are dropped first: an active key keeps its state.
        clock.advance(milliseconds: 5000)
        #expect(limiter.acquire(alice) == .allowed)
        #expect(limiter.acquire(alice) != .allowed)
    }

    @Test func concurrentCallersNeverGetMoreThanTheBurst() async {
        let limiter = RateLimiter(requestsPerSecond: 1, burst: 100, clock: { 5_000_000_000 })
        let allowed = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask { (0..<1000).filter { _ in limiter.acquire(alice) == .allowed }.count }
            }
            return await group.reduce(0, +)
        }
        #expect(allowed == 100)
    }
}
