/// Sockets closed in stages after their last answer (RFC 9112 §9.6): output is shut down at once,
/// input is read and dropped until the client closes its side or `seconds` pass, and only then is
/// the socket closed. Closing at once while input still arrives (the rest of a body the answer
/// refused, a line of a head that timed out, a request sent meanwhile) makes the kernel answer
/// with a reset, and a reset can erase the answer from the client's buffers before it reads it.
///
/// The deadlines only: the event loop does the socket calls. Pure, over the loop's clock.
struct LingeringSockets {
    /// How long a socket lingers at most, from the moment its output was shut down.
    let nanoseconds: UInt64
    private var deadlines: [Int32: UInt64] = [:]

    init(seconds: Double) {
        nanoseconds = UInt64(max(seconds, 0) * 1_000_000_000)
    }

    var count: Int { deadlines.count }

    func contains(_ descriptor: Int32) -> Bool { deadlines[descriptor] != nil }

    mutating func add(_ descriptor: Int32, now: UInt64) {
        deadlines[descriptor] = now + nanoseconds
    }

    mutating func remove(_ descriptor: Int32) {
        deadlines[descriptor] = nil
    }

    /// The sockets whose time is up at `now` (no longer tracked), in descriptor order.
    mutating func expired(now: UInt64) -> [Int32] {
        let due = deadlines.filter { $0.value <= now }.keys.sorted()
        for descriptor in due { deadlines[descriptor] = nil }
        return due
    }

    /// Every socket still lingering (no longer tracked): the loop is stopping.
    mutating func removeAll() -> [Int32] {
        defer { deadlines = [:] }
        return deadlines.keys.sorted()
    }
}
