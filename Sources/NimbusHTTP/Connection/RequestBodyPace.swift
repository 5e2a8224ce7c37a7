/// How fast a request body arrives, against the body timeout and the minimum rate: when its clock
/// started (moved on by the time its consumer paused reading), and how many bytes came.
struct RequestBodyPace: Equatable, Sendable {
    private(set) var startedAt: UInt64 = 0
    private(set) var received = 0
    /// Reading stopped because the body's consumer is behind; its wait is not the client's.
    private(set) var isPaused = false
    private var pausedAt: UInt64 = 0

    /// A new body starts now (its head was just read).
    mutating func start(at now: UInt64) {
        startedAt = now
        received = 0
        isPaused = false
    }

    mutating func count(_ bytes: Int) {
        received += bytes
    }

    mutating func pause(at now: UInt64) {
        isPaused = true
        pausedAt = now
    }

    /// The consumer caught up: the time it made the client wait is added to the body's clock.
    mutating func resume(at now: UInt64) {
        isPaused = false
        startedAt += now - pausedAt
    }

    /// The idle timeout from now, or the end of the time the bytes so far earn at the minimum
    /// rate (`bodySeconds` + received / `minBodyBytesPerSecond` from the start), whichever comes first.
    func deadline(now: UInt64, _ timeouts: HTTPConnectionTimeouts) -> (deadline: UInt64, timer: HTTPConnectionTimer) {
        let idle = now + HTTPConnectionTimeouts.nanoseconds(timeouts.bodySeconds)
        let rate = timeouts.minBodyBytesPerSecond
        guard rate > 0 else { return (idle, .bodyIdle) }
        let earned = max(timeouts.bodySeconds, 0) + Double(received) / rate
        let rateDeadline = startedAt &+ UInt64(min(earned, 1e9) * 1_000_000_000)
        return rateDeadline < idle ? (max(rateDeadline, 1), .bodyRate) : (idle, .bodyIdle)
    }
}
