import Glibc
import CLinux
import NimbusSupport

/// The loop's deadlines: one min-heap (`DeadlineHeap`) of the connections' timers and the
/// lingering sockets' ends. `epoll_wait` sleeps until the earliest entry (rounded up to the
/// millisecond, so never before it), and the entries due are popped after each wake-up.
extension EventLoop {
    /// How long `epoll_wait` may sleep: not at all with work queued, until the earliest deadline,
    /// or until something happens when no deadline runs.
    func waitMilliseconds() -> Int32 {
        if !jobs.isEmpty || !deferred.isEmpty { return 0 }
        guard let earliest = timers.earliest else { return -1 }
        let current = monotonicNanoseconds()
        guard earliest > current else { return 0 }
        let milliseconds = (earliest - current + 999_999) / 1_000_000
        return Int32(min(milliseconds, UInt64(Int32.max)))
    }

    /// Asks for a wake-up at `deadline` for `connection` (`HTTPConnection.syncTimer`).
    func scheduleTimer(_ connection: HTTPConnection, at deadline: UInt64) {
        scheduleTimer(LoopTimerID(descriptor: connection.descriptor, generation: connection.generation), at: deadline)
    }

    func scheduleTimer(_ id: LoopTimerID, at deadline: UInt64) {
        timers.push(id, at: deadline)
        // Moved and cancelled timers leave stale entries: dropped once they outnumber the live ones.
        if timers.count > 2 * (connections.count + lingering.count) + 1_024 {
            timers.compact { isLive($0) }
        }
    }

    /// Whether a heap entry is the one its owner still counts on.
    private func isLive(_ entry: DeadlineHeap<LoopTimerID>.Entry) -> Bool {
        if entry.id.generation == 0 { return lingering.deadline(of: entry.id.descriptor) == entry.deadline }
        guard let connection = connections[entry.id.descriptor], connection.generation == entry.id.generation else { return false }
        return connection.scheduledDeadline == entry.deadline
    }

    /// Hands every entry due at `now` to its owner; stale ones are dropped.
    func runTimers() {
        while let entry = timers.popDue(now: now) {
            let descriptor = entry.id.descriptor
            if entry.id.generation == 0 {
                if lingering.expire(descriptor, deadline: entry.deadline, now: now) { closeLingering(descriptor) }
            } else if let connection = connections[descriptor], connection.generation == entry.id.generation {
                connection.timerCameDue(entry.deadline)
            }
        }
    }

    // MARK: - Closing in stages (`LingeringSockets`)

    /// Closes the socket of a connection that has answered (and unregistered): output now, input
    /// once the client closes its side or the linger time is up. Its connection slot is released
    /// then.
    func closeAfterLingering(_ descriptor: Int32) {
        var event = epoll_event()
        event.events = Self.epollIn | Self.epollRDHUP
        event.data.fd = descriptor
        guard lingering.nanoseconds > 0, Glibc.shutdown(descriptor, Int32(SHUT_WR)) == 0,
              epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, descriptor, &event) == 0 else {
            Socket.discardInput(descriptor)
            return closeLingering(descriptor)
        }
        let deadline = lingering.add(descriptor, now: now)
        scheduleTimer(.lingering(descriptor), at: deadline)
    }

    /// Reads and drops what a lingering socket received; the end of its input (or an error)
    /// closes it. At most four buffers a wake: the deadline bounds a client that keeps sending.
    func dropLingeringInput(_ descriptor: Int32) {
        for _ in 0..<4 {
            switch Socket.read(descriptor, into: readBuffer) {
            case .bytes:
                continue
            case .wouldBlock:
                return
            case .closed, .failed:
                lingering.remove(descriptor)
                return closeLingering(descriptor)
            }
        }
    }

    /// Closes a lingering socket (its close takes it out of the epoll).
    func closeLingering(_ descriptor: Int32) {
        Glibc.close(descriptor)
        server.releaseConnectionSlot()
    }
}
