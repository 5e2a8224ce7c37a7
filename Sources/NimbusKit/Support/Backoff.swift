import Foundation

/// Exponential backoff with full jitter that honours a server's `retryAfter`: the n-th delay is
/// uniformly random in [base·2ⁿ / 2, base·2ⁿ], capped, and never shorter than `retryAfter`.
public struct Backoff: Sendable, Hashable {
    public var base: TimeInterval
    public var cap: TimeInterval
    public private(set) var attempt = 0

    public init(base: TimeInterval = 0.2, cap: TimeInterval = 30) {
        self.base = base
        self.cap = cap
    }

    public mutating func reset() { attempt = 0 }

    /// The delay before the next try; counts the attempt.
    public mutating func nextDelay(retryAfter: TimeInterval? = nil,
                                   random: (ClosedRange<Double>) -> Double = { Double.random(in: $0) }) -> TimeInterval {
        let ceiling = min(cap, base * pow(2, Double(min(attempt, 30))))
        attempt += 1
        let jittered = random((ceiling / 2)...ceiling)
        return max(jittered, retryAfter ?? 0)
    }
}

/// The wait of each long-poll: a whole number of seconds drawn from the last fifth below `limit`
/// (55 → 44...55). Devices that parked together (a server restart, a network coming back) would
/// otherwise all time out in the same second and all park again together.
func jitteredWait(_ limit: Int, random: (ClosedRange<Int>) -> Int = { Int.random(in: $0) }) -> Int {
    guard limit > 1 else { return max(limit, 0) }
    return random((limit - limit / 5)...limit)
}
