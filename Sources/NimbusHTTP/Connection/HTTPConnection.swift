import Glibc

/// One client connection on its event loop: the socket, the bytes read and to write, the parser,
/// and the handler's side of each exchange. What to do when is `HTTPConnectionState`'s decision:
/// this class feeds it the socket's and the handler's events and performs the actions it returns.
///
/// One drive loop (`drive`): every entry point (a socket event, the handler answering, a timer,
/// shutdown) runs its step, then the events that step posted are fed to the state one at a time,
/// each one's actions performed before the next. An action that causes an event (a flush that
/// drains, a write that fails) posts it to `events` and never feeds the state itself, so
/// `perform` never runs inside `perform`.
///
/// Pipelined bytes wait in the kernel or in `pending` while a request is answered, and bytes read
/// later always go behind `pending`, so requests are answered in the order they were sent.
final class HTTPConnection: @unchecked Sendable {
    // @unchecked: every member is touched only on the owning loop thread; other threads reach a
    // connection solely through `EventLoop.execute` (see HTTPResponseWriter).

    let descriptor: Int32
    /// Unique among the loop's connections (a descriptor number is reused): its timer entries.
    let generation: UInt64
    /// Where the connection comes from (given to every request).
    let peer: PeerAddress
    unowned let loop: EventLoop
    var state: HTTPConnectionState<LoopClock>
    private var parser: HTTPParser
    /// The request being read: its head, and its body unless that streams.
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// Input read but not yet parsed, kept while a request is being answered.
    private var pending: [UInt8] = []
    var outbound = OutboundBuffer()
    /// The events registered with epoll.
    private var registeredEvents: UInt32
    /// Events posted during the current step, fed to the state by `drive`.
    private var events = HTTPConnectionEvents()
    private var driving = false
    /// The deadline of this connection's entry in the loop's timer heap that counts, 0 for none.
    /// A later deadline pushes nothing (the entry, once due, finds the state's deadline later and
    /// pushes that); an earlier one pushes a new entry, leaving the old one stale.
    private(set) var scheduledDeadline: UInt64 = 0
    var cancelHandler: (@Sendable () -> Void)?
    /// The body of the request being answered, while it still streams in (uploads).
    private var bodyStream: HTTPBodyStream?
    /// A writer waiting for the outbound buffer to drain (download backpressure).
    var drainWaiter: CheckedContinuation<Bool, Never>?
    /// Sent when the input closes during the streamed answer that registered it (a heartbeat).
    var inputClosedProbe: [UInt8]?
    static let outboundHighWatermark = 1 << 20
    /// Bodies up to this size are copied behind their head and sent in one piece.
    static let copiedBodyBytes = 16 * 1024

    /// A connection just accepted, registered for `EventLoop.epollIn | EventLoop.epollRDHUP`; its
    /// header timer runs from now (`startTimer` once registered).
    init(descriptor: Int32, generation: UInt64, peer: PeerAddress, loop: EventLoop) {
        self.descriptor = descriptor
        self.generation = generation
        self.peer = peer
        self.loop = loop
        let configuration = loop.server.configuration
        parser = HTTPParser(limits: configuration.parserLimits)
        state = HTTPConnectionState(clock: LoopClock(loop: loop), timeouts: HTTPConnectionTimeouts(configuration))
        registeredEvents = state.interest.epollEvents
    }

    var configuration: HTTPServer.Configuration { loop.server.configuration }

    // MARK: - The drive loop

    /// Runs `step`, then feeds the state the events posted meanwhile, in order, performing each
    /// one's actions; then registers the epoll events and the deadline the state ends up with.
    /// Called during a drive (the handler answering inside `dispatch`), it runs `step` only: the
    /// drive under way handles its events.
    func drive(_ step: () -> Void) {
        if driving { return step() }
        driving = true
        step()
        while let event = events.popFirst() { handle(event) }
        driving = false
        if !updateInterest() { return post(.close) }
        syncTimer()
    }

    /// Posts `event` for the drive under way, or starts one.
    func post(_ event: HTTPConnectionEvent) {
        events.append(event)
        if !driving { drive {} }
    }

    private func handle(_ event: HTTPConnectionEvent) {
        switch event {
        case .readable:
            if state.readsInput { readAvailable() }
        case .readInput:
            readAvailable()
        case .resumeInput:
            parsePending()
        case .peerClosedInput:
            switch state.peerClosedInput() {
            case .sendProbe?: sendProbe()
            case .readInput?: readAvailable()
            case nil: break
            }
        case .outputDrained:
            // Queued after a flush that drained: more may have been queued (and blocked) since.
            guard outbound.isEmpty, let end = state.outputDrained() else { return }
            switch end {
            case .close: closeSocket()
            case .awaitNextRequest: awaitNextRequest()
            }
        case .bodyConsumerResumed:
            state.bodyConsumerResumed()  // reading again: `drive` registers EPOLLIN when it ends
        case .deadlinePassed:
            perform(state.deadlinePassed())
        case .drain:
            if let closing = state.drain(idleGraceSeconds: configuration.drainIdleGraceSeconds) { closed(closing) }
        case .close:
            if let closing = state.close() { closed(closing) }
        }
    }

    // MARK: - Socket events

    func handle(events raised: UInt32) {
        drive {
            if raised & (EventLoop.epollHUP | EventLoop.epollErr) != 0 { return post(.close) }
            // An event no longer wanted (`updateInterest`) would be raised on every wait: drop it now.
            let wanted = state.interest.epollEvents
            if raised & ~wanted != 0, !register(wanted) { return post(.close) }
            let raised = raised & wanted
            if raised & EventLoop.epollOut != 0 { flush() }
            if raised & EventLoop.epollIn != 0 { post(.readable) }
            if raised & EventLoop.epollRDHUP != 0 { post(.peerClosedInput) }
        }
    }

    private func readAvailable() {
        let buffer = loop.readBuffer
        // Bounded: at most a few buffers per wake-up keeps the loop fair between connections.
        for _ in 0..<4 {
            switch Socket.read(descriptor, into: buffer) {
            case .bytes(let count):
                let input = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                if pending.isEmpty {
                    process(input)
                } else {
                    // Bytes saved from an earlier read are parsed first: pipelined requests are
                    // answered in the order they were sent, whatever the read boundaries.
                    pending.append(contentsOf: input)
                    parsePending()
                }
                if !state.readsInput { return }
                if count < buffer.count && !state.inputClosed { return }
            case .wouldBlock:
                return
            case .closed:
                perform(state.inputEnded(hasPendingInput: !pending.isEmpty))
                return
            case .failed:
                if let closing = state.close() { closed(closing) }
                return
            }
        }
    }

    /// Resumes parsing input that arrived while the previous request was answered (the loop
    /// calls it after the event batch in which the answer went out).
    func resume() {
        drive { parsePending() }
    }

    private func parsePending() {
        guard state.phase == .idle, !pending.isEmpty else { return }
        let input = pending
        pending = []
        input.withUnsafeBytes { process($0) }
        if state.inputClosed, pending.isEmpty { perform(state.closeIfNothingToAnswer(hasPendingInput: false)) }
    }

    /// Feeds bytes to the parser until it needs more, a request is complete, or input is bad.
    private func process(_ input: UnsafeRawBufferPointer) {
        if !input.isEmpty { state.inputArrived() }
        var offset = 0
        while true {
            let (consumed, event) = parser.parse(UnsafeRawBufferPointer(rebasing: input[offset...]))
            let sliceStart = offset
            offset += consumed
            switch event {
            case .needMore:
                state.parserNeedsMore()
                return
            case .head(let parsedHead):
                head = parsedHead
                let streamLimit = parsedHead.framing == .none ? nil : configuration.bodyStreamLimit(parsedHead)
                body = streamLimit == nil ? Self.bodyBuffer(for: parsedHead.framing, limit: parser.maxBodyBytes) : []
                if let streamLimit { parser.maxBodyBytes = streamLimit }
                // Performed before parsing on: a streamed body's bytes go to the stream `dispatch` makes.
                perform(state.headReceived(parsedHead, bodyLimit: parser.maxBodyBytes, streamsBody: streamLimit != nil))
                if state.phase == .closed { return }
            case .body(let range):
                let bytes = UnsafeRawBufferPointer(rebasing: input[(sliceStart + range.lowerBound)..<(sliceStart + range.upperBound)])
                state.bodyBytesReceived(bytes.count)
                if let stream = bodyStream {
                    if !stream.append(Array(bytes)) { state.bodyConsumerPaused() }
                } else {
                    body.append(contentsOf: bytes)
                }
            case .messageEnd:
                if offset < input.count {
                    pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[offset...]))
                }
                perform(state.messageEnded())
                return
            case .error(let error):
                perform(state.parseFailed(error.status, reason: error.reason))
                return
            }
        }
    }

    // MARK: - Performing the state's actions

    /// Registers the events the state now waits for, then does what it asked, in order. Only the
    /// drive loop's steps call it; an action posts what it causes (`post`) instead of calling it.
    private func perform(_ actions: HTTPConnectionActions) {
        if !updateInterest() { post(.close) }
        for action in actions {
            switch action {
            case .sendContinue:
                outbound.append(contentsOf: HTTPResponseHeadEncoder.continueHead)
                flush()
            case .dispatch:
                dispatch()
            case .finishBodyStream:
                bodyStream?.finish()
                bodyStream = nil
            case .failBodyStream(let status, let reason):
                bodyStream?.fail(HTTPBodyStream.Failure(reason: reason, status: status))
                bodyStream = nil
            case .respondWithError(let status, let reason):
                pending = []
                respond(configuration.errorResponse(status, reason), requestID: state.requestID)
            case .sendProbe:
                sendProbe()
            case .readInput:
                post(.readInput)
            case .resumeInput:
                post(.resumeInput)
            case .awaitNextRequest:
                awaitNextRequest()
            case .close:
                closeSocket()
            case .cancelHandler:
                cancelTheHandler()
            }
        }
    }

    private func sendProbe() {
        if let probe = inputClosedProbe { writeChunk(probe, requestID: state.requestID) }
    }

    private func awaitNextRequest() {
        cancelHandler = nil
        inputClosedProbe = nil
        if !pending.isEmpty { loop.scheduleResume(self) }
    }

    private func closed(_ closing: HTTPConnectionClosing) {
        closeSocket()
        if closing.cancelsHandler { cancelTheHandler() }
    }

    private func cancelTheHandler() {
        let handler = cancelHandler
        cancelHandler = nil
        handler?()
    }

    /// Registers at once the events the state starts waiting for; those it stops waiting for stay
    /// registered until one is raised (`handle(events:)`). A request answered before its client
    /// sends more (reading stops while answering) costs no `epoll_ctl`: it cost two. False when
    /// `epoll_ctl` failed (the connection must close).
    private func updateInterest() -> Bool {
        let wanted = state.interest.epollEvents
        return wanted & ~registeredEvents == 0 || register(wanted)
    }

    private func register(_ events: UInt32) -> Bool {
        guard events != registeredEvents, state.phase != .closed else { return true }
        registeredEvents = events
        return loop.updateInterest(self, events: events)
    }

    /// Pushes the state's deadline to the loop's timer heap when it is earlier than the entry
    /// that counts (or none counts).
    private func syncTimer() {
        let deadline = state.deadline
        guard deadline != 0, scheduledDeadline == 0 || deadline < scheduledDeadline else { return }
        scheduledDeadline = deadline
        loop.scheduleTimer(self, at: deadline)
    }

    /// Registered with the loop: the header timer goes into the loop's heap.
    func startTimer() {
        syncTimer()
    }

    private func dispatch() {
        // A connection that closed meanwhile (the 100 Continue could not be sent) has no handler.
        // The head and body move into the request (not copied, then released).
        guard state.phase == .responding, let head = head.take() else { return }
        let stream = state.bodyStreams
            ? HTTPBodyStream(resumeReading: { [loop, self] in loop.execute { self.resumeBodyReading() } })
            : nil
        cancelHandler = nil
        inputClosedProbe = nil
        var request = HTTPRequest(head: head, body: [])
        swap(&request.body, &body)
        request.bodyStream = stream
        request.peer = peer
        request.receivedAt = loop.now
        request.loop = loop
        let trusted = loop.server.configuration.trustedProxies
        if !trusted.isEmpty { request.forwarded = trusted.origin(peer: peer, headers: request.headers) }
        bodyStream = stream
        loop.server.handle(request, HTTPResponseWriter(connection: self, requestID: state.requestID))
    }

    private func closeSocket() {
        loop.unregister(self)
        if state.closedAfterAnswer {
            loop.closeAfterLingering(descriptor)
        } else {
            Socket.discardInput(descriptor)
            Glibc.close(descriptor)
            loop.server.releaseConnectionSlot()
        }
        outbound.discard()
        pending = []
        body = []
        if let stream = bodyStream {
            bodyStream = nil
            stream.fail(HTTPBodyStream.Failure(reason: "The client closed the connection before the body ended.", status: nil))
        }
        if let waiter = drainWaiter {
            drainWaiter = nil
            waiter.resume(returning: false)
        }
    }

    /// The body consumer caught up: read the socket again.
    func resumeBodyReading() {
        post(.bodyConsumerResumed)
    }

    /// Writes what the socket takes; waits for EPOLLOUT when it is full.
    func flush() {
        finishFlush(outbound.flush(to: descriptor))
    }

    /// What a flush did. A blocked socket is told to the state at once (it decides on whether
    /// output waits, and that changes nothing else); a drained or failed one is posted.
    func finishFlush(_ result: OutboundBuffer.FlushResult) {
        switch result {
        case .blocked:
            state.outputBlocked()
        case .failed:
            post(.close)
        case .drained:
            if let waiter = drainWaiter {
                drainWaiter = nil
                waiter.resume(returning: true)
            }
            post(.outputDrained)
        }
    }

    // MARK: - Timers, draining, closing (the loop's side)

    /// An entry of the loop's timer heap came due. Stale unless it is the one that counts; the
    /// state decides whether its deadline (perhaps later by now) has passed.
    func timerCameDue(_ deadline: UInt64) {
        guard deadline == scheduledDeadline else { return }
        scheduledDeadline = 0
        post(.deadlinePassed)
    }

    /// Server shutdown: busy connections close after their answer, idle ones after the grace
    /// (`HTTPServer.Configuration.drainIdleGraceSeconds`).
    func drain() {
        post(.drain)
    }

    func close() {
        post(.close)
    }
}
