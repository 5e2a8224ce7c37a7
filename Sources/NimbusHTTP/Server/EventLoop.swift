import Foundation
import CLinux
import Glibc
import NimbusSupport

/// One epoll event loop on its own thread, owning the connections it accepted.
///
/// Connections are touched only on their loop's thread; other threads reach them by `execute`,
/// which queues a task and wakes the loop through an eventfd. Handlers run on the loop thread and
/// either answer at once (cheap routes) or start a task, which runs on this loop too (the loop is
/// a `TaskExecutor`) and may wait for descriptors through its epoll (`LoopContext`).
final class EventLoop: @unchecked Sendable {
    // @unchecked: everything but `inbox` is confined to the loop thread (`run` and the tasks it
    // executes); `inbox` is a Lock, the descriptors are immutable after init.

    let index: Int
    let server: HTTPServer
    let epollDescriptor: Int32
    private let wakeDescriptor: Int32
    private let inbox = Lock<[@Sendable () -> Void]>([])
    private var threadID: pthread_t?
    private let stopped = DispatchSemaphore(value: 0)

    // Loop-thread state.
    private(set) var connections: [Int32: HTTPConnection] = [:]
    /// Tasks' jobs enqueued from this thread, run after the current event batch.
    private(set) var jobs: [UnownedJob] = []
    /// Descriptors tasks on this loop wait for (database sockets), with their waiters.
    private var watchers: [Int32: CheckedContinuation<Void, Never>] = [:]
    /// Descriptors `waitUntilReady` added to the epoll (one-shot, so disarmed once reported):
    /// the next wait re-arms them with one call instead of adding and removing them each time.
    private var watched: Set<Int32> = []
    private(set) var deferred: [HTTPConnection] = []
    /// Sockets whose connection answered and closed, waiting for the client to close its side.
    var lingering: LingeringSockets
    /// The connections' and lingering sockets' deadlines: `epoll_wait` sleeps until the earliest.
    var timers = DeadlineHeap<LoopTimerID>()
    private var lastGeneration: UInt64 = 0
    private var listener: Int32 = -1
    private var running = true
    private(set) var draining = false
    let readBuffer: UnsafeMutableRawBufferPointer
    /// The monotonic time when `epoll_wait` last returned: the clock of the connections' timers
    /// and of requests' arrival (one read per wake-up, not several per request).
    private(set) var now: UInt64 = monotonicNanoseconds()
    private(set) var cachedDateHeader: String = ""
    private var cachedDateSecond: Int = -1

    static let epollIn = UInt32(EPOLLIN.rawValue)
    static let epollOut = UInt32(EPOLLOUT.rawValue)
    static let epollRDHUP = UInt32(EPOLLRDHUP.rawValue)
    static let epollHUP = UInt32(EPOLLHUP.rawValue)
    static let epollErr = UInt32(EPOLLERR.rawValue)
    static let epollExclusive = UInt32(1) << 28
    static let epollOneShot = UInt32(1) << 30

    init(index: Int, server: HTTPServer) throws {
        self.index = index
        self.server = server
        lingering = LingeringSockets(seconds: server.configuration.lingerSeconds)
        epollDescriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeDescriptor = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard epollDescriptor >= 0, wakeDescriptor >= 0 else {
            throw Socket.Failure(call: "epoll_create1/eventfd", errorNumber: errno)
        }
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        var event = epoll_event()
        event.events = Self.epollIn
        event.data.fd = wakeDescriptor
        guard epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, wakeDescriptor, &event) == 0 else {
            throw Socket.Failure(call: "epoll_ctl(ADD, eventfd)", errorNumber: errno)
        }
    }

    deinit {
        close(epollDescriptor)
        close(wakeDescriptor)
        readBuffer.deallocate()
    }

    /// Watches `listener` for connections to accept (before `start`).
    func watch(listener: Int32) throws {
        var event = epoll_event()
        // EPOLLEXCLUSIVE: one waiting loop is woken per new connection, not all of them.
        event.events = Self.epollIn | Self.epollExclusive
        event.data.fd = listener
        guard epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, listener, &event) == 0 else {
            throw Socket.Failure(call: "epoll_ctl(ADD, listener)", errorNumber: errno)
        }
        self.listener = listener
    }

    /// Starts the loop thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "nimbus-http-\(index)"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Runs `task` on the loop thread (inline when already on it).
    func execute(_ task: @escaping @Sendable () -> Void) {
        if isInLoop {
            task()
            return
        }
        let wasEmpty = inbox.withLock { tasks in
            tasks.append(task)
            return tasks.count == 1
        }
        if wasEmpty { wake() }
    }

    var isInLoop: Bool {
        guard let threadID else { return false }
        return pthread_equal(pthread_self(), threadID) != 0
    }

    /// Stops the thread after the current iteration; blocks until it has.
    func stop() {
        execute { [self] in running = false }
        stopped.wait()
    }

    // MARK: - Loop-thread API for connections

    /// Adds a connection's socket to the epoll; false (logged) when `epoll_ctl` failed.
    private func register(_ connection: HTTPConnection, events: UInt32) -> Bool {
        var event = epoll_event()
        event.events = events
        event.data.fd = connection.descriptor
        guard epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, connection.descriptor, &event) == 0 else {
            logEpollFailure("ADD", connection.descriptor, closing: "the connection")
            return false
        }
        connections[connection.descriptor] = connection
        return true
    }

    /// False (logged) when `epoll_ctl` failed: the connection must close.
    func updateInterest(_ connection: HTTPConnection, events: UInt32) -> Bool {
        var event = epoll_event()
        event.events = events
        event.data.fd = connection.descriptor
        guard epoll_ctl(epollDescriptor, EPOLL_CTL_MOD, connection.descriptor, &event) == 0 else {
            logEpollFailure("MOD", connection.descriptor, closing: "the connection")
            return false
        }
        return true
    }

    func unregister(_ connection: HTTPConnection) {
        // The socket is closed next, which removes it from the epoll anyway: a failure is logged.
        if epoll_ctl(epollDescriptor, EPOLL_CTL_DEL, connection.descriptor, nil) != 0 {
            logEpollFailure("DEL", connection.descriptor, closing: "the connection (closing anyway)")
        }
        connections[connection.descriptor] = nil
    }

    func logEpollFailure(_ operation: String, _ descriptor: Int32, closing what: String) {
        let number = errno
        server.logger.warning("epoll_ctl \(operation) failed (\(String(cString: strerror(number)))): closing \(what)",
                              ["descriptor": descriptor, "errno": number])
    }

    /// A connection's generation: unique on this loop, never 0 (a lingering socket's).
    private func nextGeneration() -> UInt64 {
        lastGeneration += 1
        return lastGeneration
    }

    /// Asks for `connection.resume()` after the current event batch (never recursively).
    func scheduleResume(_ connection: HTTPConnection) {
        deferred.append(connection)
    }

    var connectionCount: Int { connections.count }

    /// Stops accepting and closes idle connections; active ones close after their response.
    func beginDraining() {
        guard !draining else { return }
        draining = true
        if listener >= 0, epoll_ctl(epollDescriptor, EPOLL_CTL_DEL, listener, nil) != 0 {
            logEpollFailure("DEL", listener, closing: "nothing: the listener stays watched until it closes")
        }
        for connection in Array(connections.values) {
            connection.drain()
        }
    }

    /// Closes every connection, whatever it is doing, and every lingering socket.
    func closeAll() {
        for connection in Array(connections.values) {
            connection.close()
        }
        for descriptor in lingering.removeAll() { closeLingering(descriptor) }
    }

    // MARK: - The loop

    private func run() {
        threadID = pthread_self()
        let capacity = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        refreshDate()
        while running {
            let count = epoll_wait(epollDescriptor, events, Int32(capacity), waitMilliseconds())
            if count < 0 && errno != EINTR {
                server.logger.error("epoll_wait failed", ["errno": errno])
                break
            }
            now = monotonicNanoseconds()
            refreshDate()
            for slot in 0..<max(Int(count), 0) {
                let event = events[slot]
                let descriptor = event.data.fd
                if descriptor == wakeDescriptor {
                    drainInbox()
                } else if let waiter = watchers.removeValue(forKey: descriptor) {
                    waiter.resume()
                } else if descriptor == listener {
                    acceptConnections()
                } else if let connection = connections[descriptor] {
                    connection.handle(events: event.events)
                } else if lingering.contains(descriptor) {
                    dropLingeringInput(descriptor)
                }
            }
            runDeferred()
            runJobs()
            runTimers()
        }
        closeAll()
        stopped.signal()
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, 8)
    }

    private func drainInbox() {
        var value: UInt64 = 0
        _ = read(wakeDescriptor, &value, 8)
        while true {
            let tasks = inbox.withLock { tasks in
                defer { tasks.removeAll(keepingCapacity: true) }
                return tasks
            }
            if tasks.isEmpty { return }
            for task in tasks { task() }
            runDeferred()
            runJobs()
        }
    }

    /// Runs the jobs tasks enqueued from this thread, and the ones those enqueue, in order.
    private func runJobs() {
        while !jobs.isEmpty {
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            let executor = asUnownedTaskExecutor()
            for job in batch { job.runSynchronously(on: executor) }
            runDeferred()
        }
    }

    private func runDeferred() {
        while !deferred.isEmpty {
            let batch = deferred
            deferred.removeAll(keepingCapacity: true)
            for connection in batch { connection.resume() }
        }
    }

    /// Shutdown: takes every connection still waiting in the listen queue (served as draining).
    func acceptRemaining() {
        while acceptConnections(limit: 64) == 64 {}
    }

    /// Accepts up to `limit` connections; returns how many were taken.
    @discardableResult
    private func acceptConnections(limit: Int = 64) -> Int {
        // Bounded per wake so one loop cannot starve its existing connections under a flood.
        for taken in 0..<limit {
            let descriptor: Int32, peer: PeerAddress
            do {
                guard let accepted = try Socket.accept(listener) else { return taken }
                (descriptor, peer) = accepted
            } catch {
                server.logger.warning("accept failed", ["error": "\(error)"])
                return taken
            }
            guard server.reserveConnectionSlot() else {
                server.rejectOverCapacity(descriptor, date: cachedDateHeader)
                continue
            }
            let connection = HTTPConnection(descriptor: descriptor, generation: nextGeneration(), peer: peer, loop: self)
            guard register(connection, events: Self.epollIn | Self.epollRDHUP) else {
                Glibc.close(descriptor)
                server.releaseConnectionSlot()
                continue
            }
            connection.startTimer()
            // Accepted while shutting down: its request (a proxy's, already sent) is answered
            // with `Connection: close`.
            if draining { connection.drain() }
        }
        return limit
    }

    /// `Date` changes once a second; format it once a second per loop (RFC 9110 §5.6.7 IMF-fixdate).
    private func refreshDate() {
        var now = time(nil)
        guard Int(now) != cachedDateSecond else { return }
        cachedDateSecond = Int(now)
        var parts = tm()
        gmtime_r(&now, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let length = strftime(&buffer, 64, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        cachedDateHeader = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

// MARK: - Tasks and descriptors on the loop thread

extension EventLoop: TaskExecutor, LoopContext {
    /// From the loop thread, jobs queue up behind the current event batch (never run nested);
    /// from any other thread they come through the inbox and its eventfd.
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if isInLoop {
            jobs.append(job)
        } else {
            execute { [self] in jobs.append(job) }
        }
    }

    var taskExecutor: any TaskExecutor { self }

    var isCurrent: Bool { isInLoop }

    func waitUntilReady(_ descriptor: Int32, writable: Bool) async {
        precondition(isInLoop, "waitUntilReady outside its event loop's thread")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            var event = epoll_event()
            event.events = (writable ? Self.epollOut : Self.epollIn) | Self.epollOneShot
            event.data.fd = descriptor
            // Armed with the descriptor already ready, epoll reports it at once: nothing is missed.
            if watched.contains(descriptor) {
                if epoll_ctl(epollDescriptor, EPOLL_CTL_MOD, descriptor, &event) == 0 {
                    watchers[descriptor] = continuation
                    return
                }
                // ENOENT: that socket was closed (epoll forgot it) and the number is another's now.
                watched.remove(descriptor)
            }
            if epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, descriptor, &event) != 0 {
                // A closed socket: let the caller find out what is wrong by trying.
                continuation.resume()
                return
            }
            watched.insert(descriptor)
            watchers[descriptor] = continuation
        }
    }
}
