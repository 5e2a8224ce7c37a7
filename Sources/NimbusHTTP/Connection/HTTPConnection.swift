import Glibc

/// One client connection on its event loop: the socket, the bytes read and to write, the parser,
/// and the handler's side of each exchange. What to do when is `HTTPConnectionState`'s decision:
/// this class feeds it the socket's and the handler's events and performs the actions it returns.
///
/// Pipelined bytes wait in the kernel or in `pending` while a request is answered, and bytes read
/// later always go behind `pending`, so requests are answered in the order they were sent.
final class HTTPConnection: @unchecked Sendable {
    // @unchecked: every member is touched only on the owning loop thread; other threads reach a
    // connection solely through `EventLoop.execute` (see HTTPResponseWriter).

    let descriptor: Int32
    /// Where the connection comes from (given to every request).
    let peer: PeerAddress
    unowned let loop: EventLoop
    private(set) var state: HTTPConnectionState<LoopClock>
    private var parser: HTTPParser
    /// The request being read: its head, and its body unless that streams.
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// Input read but not yet parsed, kept while a request is being answered.
    private var pending: [UInt8] = []
    private var outbound = OutboundBuffer()
    /// The events registered with epoll.
    private var registeredEvents: UInt32
    private var cancelHandler: (@Sendable () -> Void)?
    /// The body of the request being answered, while it still streams in (uploads).
    private var bodyStream: HTTPBodyStream?
    /// A writer waiting for the outbound buffer to drain (download backpressure).
    private var drainWaiter: CheckedContinuation<Bool, Never>?
    /// Sent when the input closes during the streamed answer that registered it (a heartbeat).
    private var inputClosedProbe: [UInt8]?
    static let outboundHighWatermark = 1 << 20
    /// Bodies up to this size are copied behind their head and sent in one piece.
    private static let copiedBodyBytes = 16 * 1024

    /// A connection just accepted, registered for `EventLoop.epollIn | EventLoop.epollRDHUP`; its
    /// header timer runs from now.
    init(descriptor: Int32, peer: PeerAddress, loop: EventLoop) {
        self.descriptor = descriptor
        self.peer = peer
        self.loop = loop
        let configuration = loop.server.configuration
        parser = HTTPParser(limits: configuration.parserLimits)
        state = HTTPConnectionState(clock: LoopClock(loop: loop), timeouts: HTTPConnectionTimeouts(configuration))
        registeredEvents = state.interest.epollEvents
    }

    var configuration: HTTPServer.Configuration { loop.server.configuration }

    /// The running timer's monotonic deadline in ns, 0 when none runs (for the loop's scan).
    var deadline: UInt64 { state.deadline }

    // MARK: - Socket events

    func handle(events raised: UInt32) {
        if raised & (EventLoop.epollHUP | EventLoop.epollErr) != 0 {
            close()
            return
        }
        // An event no longer wanted (`updateInterest`) would be raised on every wait: drop it now.
        let wanted = state.interest.epollEvents
        if raised & ~wanted != 0 { register(wanted) }
        let events = raised & wanted
        if events & EventLoop.epollOut != 0 {
            flush()
            if state.phase == .closed { return }
        }
        if events & EventLoop.epollIn != 0, state.readsInput {
            readAvailable()
            if state.phase == .closed { return }
        }
        if events & EventLoop.epollRDHUP != 0 {
            perform(state.peerClosedInput())
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
                    resume()
                }
                if !state.readsInput { return }
                if count < buffer.count && !state.inputClosed { return }
            case .wouldBlock:
                return
            case .closed:
                perform(state.inputEnded(hasPendingInput: !pending.isEmpty))
                return
            case .failed:
                close()
                return
            }
        }
    }

    /// Resumes parsing input that arrived while the previous request was answered.
    func resume() {
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
                body = []
                let streamLimit = parsedHead.framing == .none ? nil : configuration.bodyStreamLimit(parsedHead)
                if let streamLimit { parser.maxBodyBytes = streamLimit }
                perform(state.headReceived(parsedHead, bodyLimit: parser.maxBodyBytes, streamsBody: streamLimit != nil))
                if state.phase == .closed { return }
            case .body(let range):
                let bytes = UnsafeRawBufferPointer(rebasing: input[(sliceStart + range.lowerBound)..<(sliceStart + range.upperBound)])
                state.bodyBytesReceived(bytes.count)
                if let stream = bodyStream {
                    if !stream.append(Array(bytes)) { perform(state.bodyConsumerPaused()) }
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

    /// Registers the events the state now waits for, then does what it asked, in order.
    private func perform(_ actions: HTTPConnectionActions) {
        updateInterest()
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
                if let probe = inputClosedProbe { writeChunk(probe, requestID: state.requestID) }
            case .readInput:
                readAvailable()
            case .resumeInput:
                resume()
            case .awaitNextRequest:
                cancelHandler = nil
                inputClosedProbe = nil
                if !pending.isEmpty { loop.scheduleResume(self) }
            case .close:
                closeSocket()
            case .cancelHandler:
                let handler = cancelHandler
                cancelHandler = nil
                handler?()
            }
        }
    }

    /// Registers at once the events the state starts waiting for; those it stops waiting for stay
    /// registered until one is raised (`handle(events:)`). A request answered before its client
    /// sends more (reading stops while answering) costs no `epoll_ctl`: it cost two.
    private func updateInterest() {
        let wanted = state.interest.epollEvents
        if wanted & ~registeredEvents != 0 { register(wanted) }
    }

    private func register(_ events: UInt32) {
        guard events != registeredEvents, state.phase != .closed else { return }
        registeredEvents = events
        loop.updateInterest(self, events: events)
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

    // MARK: - The handler's side (HTTPResponseWriter)

    func setCancelHandler(_ handler: @escaping @Sendable () -> Void, requestID: UInt64) {
        guard state.isAnswering(requestID) else { return }
        cancelHandler = handler
    }

    /// Registers the bytes sent if the peer shuts down its input during this streamed answer.
    func setInputClosedProbe(_ bytes: [UInt8], requestID: UInt64) {
        guard state.isAnswering(requestID) else { return }
        inputClosedProbe = bytes
        if state.inputClosed, state.exchange.streaming { writeChunk(bytes, requestID: requestID) }
    }

    func respond(_ response: HTTPResponse, requestID: UInt64) {
        let closeRequested = HTTPResponseHeadEncoder.asksToClose(response.headers)
        let contentLength = response.body.count
        guard let head = state.startResponse(requestID: requestID, streamed: false, contentLength: contentLength, closeRequested: closeRequested) else { return }
        cancelHandler = nil
        let bodyAllowed = !head.isHeadRequest && HTTPResponseHeadEncoder.hasContent(response.status)
        // A large body with nothing queued goes to the socket from where it lies (zero-copy).
        let sendsBodyInPlace = bodyAllowed && contentLength > Self.copiedBodyBytes && outbound.isEmpty
        encode(head, response.status, response.headers, contentLength: contentLength)
        if sendsBodyInPlace {
            finishFlush(outbound.flush(thenBody: response.body, to: descriptor))
            return
        }
        if bodyAllowed { outbound.append(contentsOf: response.body) }
        flush()
    }

    func startStreaming(status: HTTPStatus, headers: HTTPHeaders, contentLength: Int?, requestID: UInt64) {
        let closeRequested = HTTPResponseHeadEncoder.asksToClose(headers)
        guard let head = state.startResponse(requestID: requestID, streamed: true, contentLength: contentLength, closeRequested: closeRequested) else { return }
        encode(head, status, headers, contentLength: contentLength)
        if state.exchange.responseComplete { cancelHandler = nil }  // HEAD: no body follows
        flush()
    }

    /// Queues body bytes and calls back (on the loop) when the outbound buffer has room again;
    /// false when the connection is gone.
    func write(_ bytes: [UInt8], requestID: UInt64, resume: CheckedContinuation<Bool, Never>) {
        guard state.acceptsBody(requestID) else {
            resume.resume(returning: false)
            return
        }
        writeChunk(bytes, requestID: requestID)
        if state.phase == .closed {
            resume.resume(returning: false)
        } else if outbound.unsentCount > Self.outboundHighWatermark {
            drainWaiter = resume
        } else {
            resume.resume(returning: true)
        }
    }

    func writeChunk(_ bytes: [UInt8], requestID: UInt64) {
        if appendBody(bytes, requestID: requestID) { flush() }
    }

    /// Frames body bytes into the outbound buffer, not sent yet; false when they do not belong.
    private func appendBody(_ bytes: [UInt8], requestID: UInt64) -> Bool {
        guard let framing = state.frameBody(bytes.count, requestID: requestID) else { return false }
        switch framing {
        case .fixedLength(let count): outbound.append(contentsOf: bytes[0..<count])
        case .chunked: outbound.appendChunk(bytes)
        case .untilClose: outbound.append(contentsOf: bytes)
        }
        return true
    }

    /// Ends a streamed response, its `last` body bytes and the end going out in one send.
    func finishStreaming(requestID: UInt64, last: [UInt8] = []) {
        let appended = !last.isEmpty && appendBody(last, requestID: requestID)
        guard let end = state.finishResponse(requestID: requestID) else { return appended ? flush() : () }
        switch end {
        case .tooShort:
            close()
            return
        case .lastChunk:
            outbound.appendLastChunk()
        case .complete:
            break
        }
        cancelHandler = nil
        flush()
    }

    /// The body consumer caught up: read the socket again.
    func resumeBodyReading() {
        perform(state.bodyConsumerResumed())
    }

    private func encode(_ head: HTTPExchange.ResponseHead, _ status: HTTPStatus, _ headers: HTTPHeaders, contentLength: Int?) {
        let date = loop.cachedDateHeader
        outbound.append { bytes in
            HTTPResponseHeadEncoder.encode(status, headers, version: head.version, contentLength: contentLength,
                                           keepAlive: head.keepAlive, date: date, into: &bytes)
        }
    }

    /// Writes what the socket takes; waits for EPOLLOUT when it is full.
    private func flush() {
        finishFlush(outbound.flush(to: descriptor))
    }

    private func finishFlush(_ result: OutboundBuffer.FlushResult) {
        switch result {
        case .blocked:
            perform(state.outputBlocked())
        case .failed:
            close()
        case .drained:
            if let waiter = drainWaiter {
                drainWaiter = nil
                waiter.resume(returning: true)
            }
            perform(state.outputDrained())
        }
    }

    // MARK: - Timers, draining, closing (the loop's side)

    /// The timer ran out (the loop's scan saw its deadline pass).
    func deadlineExpired() {
        perform(state.deadlinePassed())
    }

    /// Server shutdown: busy connections close after their answer, idle ones after the grace
    /// (`HTTPServer.Configuration.drainIdleGraceSeconds`).
    func drain() {
        perform(state.drain(idleGraceSeconds: loop.server.configuration.drainIdleGraceSeconds))
    }

    func close() {
        perform(state.close())
    }
}
