import NimbusSupport

/// Monotonic time for the connection's timers: the system's, or one a test moves by hand.
protocol MonotonicClock {
    /// Nanoseconds from an arbitrary start; never goes backwards.
    var nanoseconds: UInt64 { get }
}

/// The system's monotonic clock (CLOCK_MONOTONIC).
struct SystemMonotonicClock: MonotonicClock {
    var nanoseconds: UInt64 { monotonicNanoseconds() }
}

/// The event loop's time of its last wake-up: timers of seconds do not need a clock read of
/// their own for every step of every request.
struct LoopClock: MonotonicClock {
    unowned let loop: EventLoop
    var nanoseconds: UInt64 { loop.now }
}
