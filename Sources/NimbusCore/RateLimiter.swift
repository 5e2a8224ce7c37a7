import NimbusSupport

/// Per-key token buckets: each key may make `burst` requests at once and then one every
/// `1 / requestsPerSecond` seconds (the `requestsPerSecondPerToken` and `requestBurstPerToken`
/// limits, keyed by the bearer token's digest).
///
/// Kept in the GCRA form (one "theoretical arrival time" per key instead of a count and a
/// timestamp): a key is allowed while its arrival time is at most `burst` intervals ahead of now.
/// A key whose arrival time has passed holds a full bucket, exactly as an absent key, so such
/// entries can be dropped at any time: that is how the table stays bounded. The table is split
/// into shards, each behind its own lock held for a dictionary lookup only.
package final class RateLimiter: Sendable {
    /// A bucket's key: the first 128 bits of a SHA-256 digest.
    package struct Key: Hashable, Sendable {
        let high: UInt64
        let low: UInt64

        /// The key of a digest (at least 16 bytes; shorter ones are zero-padded).
        package init(digest: [UInt8]) {
            var high: UInt64 = 0, low: UInt64 = 0
            for index in 0..<16 {
                let byte = UInt64(index < digest.count ? digest[index] : 0)
                if index < 8 { high = high << 8 | byte } else { low = low << 8 | byte }
            }
            self.high = high
            self.low = low
        }
    }

    package enum Decision: Equatable, Sendable {
        case allowed
        /// Refused; the same key is allowed again after this many nanoseconds.
        case throttled(retryAfterNanoseconds: UInt64)

        /// `Retry-After` in whole seconds: the wait rounded up, at least 1.
        package var retryAfterSeconds: Int? {
            guard case .throttled(let nanoseconds) = self else { return nil }
            return max(1, Int((nanoseconds + 999_999_999) / 1_000_000_000))
        }
    }

    private final class Shard: Sendable {
        let arrivals = Lock<[Key: UInt64]>([:])
    }

    package let requestsPerSecond: Int
    package let burst: Int
    /// Nanoseconds between two requests at the sustained rate.
    private let interval: UInt64
    /// How far ahead of now a key's arrival time may run: `burst` intervals.
    private let tolerance: UInt64
    private let shards: [Shard]
    private let maxEntriesPerShard: Int
    private let clock: @Sendable () -> UInt64

    /// A limiter of `requestsPerSecond` per key with bursts of `burst` (at least 1). A rate of 0
    /// or less turns it off: every request is allowed. `clock` is monotonic nanoseconds.
    package init(requestsPerSecond: Int, burst: Int, shardCount: Int = 64, maxEntriesPerShard: Int = 4096,
                 clock: @escaping @Sendable () -> UInt64 = monotonicNanoseconds) {
        self.requestsPerSecond = requestsPerSecond
        self.burst = max(burst, 1)
        interval = requestsPerSecond > 0 ? 1_000_000_000 / UInt64(requestsPerSecond) : 0
        // Saturated: an absurd burst must not overflow (2^62 ns is over a century).
        let (product, overflow) = interval.multipliedReportingOverflow(by: UInt64(max(burst, 1)))
        tolerance = overflow ? 1 << 62 : min(product, 1 << 62)
        shards = (0..<max(shardCount, 1)).map { _ in Shard() }
        self.maxEntriesPerShard = max(maxEntriesPerShard, 1)
        self.clock = clock
    }

    /// Whether the limiter limits anything.
    package var isEnabled: Bool { requestsPerSecond > 0 }

    /// Takes one request from `key`'s bucket, or says how long until it could.
    package func acquire(_ key: Key) -> Decision {
        guard isEnabled else { return .allowed }
        let now = clock()
        let shard = shards[Int((key.high ^ key.low) % UInt64(shards.count))]
        let (interval, tolerance, cap) = (interval, tolerance, maxEntriesPerShard)
        return shard.arrivals.withLock { arrivals -> Decision in
            let arrival = max(arrivals[key] ?? now, now) + interval
            if arrival - now > tolerance {
                return .throttled(retryAfterNanoseconds: arrival - tolerance - now)
            }
            if arrivals[key] == nil, arrivals.count >= cap {
                // Full buckets are the same as absent ones; if every key is active, forget them
                // all (they start again from a full bucket) rather than grow without bound.
                arrivals = arrivals.filter { $0.value > now }
                if arrivals.count >= cap / 2 { arrivals.removeAll(keepingCapacity: true) }
            }
            arrivals[key] = arrival
            return .allowed
        }
    }

    /// Keys currently held (for tests and metrics).
    package var trackedKeys: Int {
        shards.reduce(0) { total, shard in total + shard.arrivals.withLock { $0.count } }
    }
}
