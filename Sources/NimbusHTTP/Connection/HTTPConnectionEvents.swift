/// What happened to a connection while it was doing something else: posted instead of handled on
/// the spot, and fed to its state, in order, by its one drive loop (`HTTPConnection.drive`).
/// An action never feeds the state itself, so the connection's shell never re-enters itself.
enum HTTPConnectionEvent: UInt8, Equatable, Sendable {
    /// The socket reported input (read unless the state stopped reading meanwhile).
    case readable = 1
    /// The state asked to read what the peer sent before it shut down its input.
    case readInput
    /// The state asked to parse the input saved while the previous request was answered.
    case resumeInput
    /// The peer shut down its sending side (EPOLLRDHUP).
    case peerClosedInput
    /// A flush sent everything queued (checked again when handled: more may be queued since).
    case outputDrained
    /// The streamed request body's consumer caught up.
    case bodyConsumerResumed
    /// The loop's timer heap says the deadline may have passed.
    case deadlinePassed
    /// Server shutdown.
    case drain
    /// A reset, a failed read or write, a failed `epoll_ctl`, a streamed answer cut short.
    case close
}

/// A FIFO of events, inline: sixteen fit in one word (four bits each), so posting one allocates
/// nothing on the hot path; more than that (never seen) spill into an array.
struct HTTPConnectionEvents: Equatable, Sendable {
    private var packed: UInt64 = 0
    private var count = 0
    private var spilled: [HTTPConnectionEvent] = []

    init() {}

    var isEmpty: Bool { count == 0 }

    mutating func append(_ event: HTTPConnectionEvent) {
        guard count < 16 else { return spilled.append(event) }
        packed |= UInt64(event.rawValue) << UInt64(4 * count)
        count += 1
    }

    /// The oldest event, removed; nil when none waits.
    mutating func popFirst() -> HTTPConnectionEvent? {
        guard count > 0 else { return nil }
        let raw = UInt8(truncatingIfNeeded: packed & 0xF)
        packed >>= 4
        count -= 1
        if !spilled.isEmpty { append(spilled.removeFirst()) }
        return HTTPConnectionEvent(rawValue: raw)
    }
}
