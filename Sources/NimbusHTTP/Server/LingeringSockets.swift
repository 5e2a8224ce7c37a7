/// Sockets closed in stages after their last answer (RFC 9112 §9.6): output is shut down at once,
/// input is read and dropped until the client closes its side or `seconds` pass, and only then is
/// the socket closed. Closing at once while input still arrives (the rest of a body the answer
/// refused, a line of a head that timed out, a request sent meanwhile) makes the kernel answer
/// with a reset, and a reset can erase the answer from the client's buffers before it reads it.
///
/// The deadlines only: the event loop does the socket calls and keeps the wake-ups in its
/// `DeadlineHeap`. Pure, over the loop's clock.
struct LingeringSockets {
    /// How long a socket lingers at most, from the moment its output was shut down.
    let nanoseconds: UInt64
    private var deadlines: [Int32: UInt64] = [:]

    init(seconds: Double) {
        nanoseconds = UInt64(max(seconds, 0) * 1_000_000_000)
    }

    var count: Int { deadlines.count }

    func contains(_ descriptor: Int32) -> Bool { deadlines[descriptor] != nil }

    /// When the socket's linger ends; nil when it does not linger.
    func deadline(of descriptor: Int32) -> UInt64? { deadlines[descriptor] }

    /// Starts the socket's linger; returns its deadline.
    @discardableResult
    mutating func add(_ descriptor: Int32, now: UInt64) -> UInt64 {
        let deadline = now + nanoseconds
        deadlines[descriptor] = deadline
        return deadline
    }

    mutating func remove(_ descriptor: Int32) {
        deadlines[descriptor] = nil
    }

    /// A deadline of the loop's heap came due for `descriptor`: true (and no longer tracked) when
    /// it is that socket's deadline and it has passed at `now`; false for a stale entry (the socket
    /// closed sooner, or the number lingers again with a later deadline).
    mutating func expire(_ descriptor: Int32, deadline: UInt64, now: UInt64) -> Bool {
        guard let current = deadlines[descriptor], current == deadline, deadline <= now else { return false }
        deadlines[descriptor] = nil
        return true
    }

    /// Every socket still lingering (no longer tracked): the loop is stopping.
    mutating func removeAll() -> [Int32] {
        defer { deadlines = [:] }
        return deadlines.keys.sorted()
    }
}
