import Glibc

/// Monotonic time in nanoseconds, for deadlines and latency (never goes backwards).
package func monotonicNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// Wall-clock time, injectable where rules depend on dates (retention, token expiry).
package protocol WallClock: Sendable {
    /// Milliseconds since the Unix epoch.
    func nowMilliseconds() -> Int64
}

/// The system's wall clock.
package struct SystemClock: WallClock {
    package init() {}

    package func nowMilliseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }
}
