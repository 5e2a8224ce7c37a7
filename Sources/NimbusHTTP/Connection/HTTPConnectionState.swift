/// What one HTTP/1.1 connection decides, without its socket: its phase, its timer, whether it
/// reads, and what each event asks it to do. Pure: time comes from `clock`; bytes, the parser,
/// the body stream and the handler stay with `HTTPConnection`, which feeds the events in and
/// performs the actions that come out.
///
/// Requests are answered strictly in order: while one is answered the connection does not read
/// (unless its body streams in). When the peer shuts down its sending side, what it sent is still
/// answered before the connection closes; only a reset or a failed write means it is gone.
struct HTTPConnectionState<Clock: MonotonicClock> {
    let clock: Clock
    let timeouts: HTTPConnectionTimeouts
    private(set) var phase: HTTPConnectionPhase = .idle
    /// Monotonic deadline in ns of the running timer, 0 when none runs.
    private(set) var deadline: UInt64 = 0
    private(set) var timer: HTTPConnectionTimer = .header
    /// The request being answered (or the last one).
    private(set) var exchange = HTTPExchange()
    /// What the head being read asks of its exchange, until it is dispatched.
    private var upcoming = HTTPExchange.Request()
    private(set) var bodyPace = RequestBodyPace()
    /// The request's body streams to the handler and has not ended.
    private(set) var bodyStreams = false
    /// The peer shut down its sending side: no request comes after those received.
    private(set) var inputClosed = false
    /// The server shuts down: the current exchange is the connection's last.
    private(set) var draining = false
    private var reading = true
    /// Queued output waits for room in the socket.
    private var writePending = false
    /// The connection closed right after a complete answer, its client's input still open: the
    /// socket is closed in stages (`LingeringSockets`), so input still arriving cannot reset the
    /// connection under the answer.
    private(set) var closedAfterAnswer = false

    /// A connection just accepted: its first request must begin within the header timeout
    /// (slow-loris protection).
    init(clock: Clock, timeouts: HTTPConnectionTimeouts) {
        self.clock = clock
        self.timeouts = timeouts
        setDeadline(timeouts.headerSeconds, .header)
    }

    var requestID: UInt64 { exchange.requestID }

    var interest: HTTPConnectionInterest {
        guard phase != .closed else { return [] }
        var interest: HTTPConnectionInterest = []
        if reading { interest.insert(.read) }
        // After the peer's FIN, EPOLLRDHUP would be raised on every wait: it is not watched.
        if !inputClosed { interest.insert(.peerClose) }
        if writePending { interest.insert(.write) }
        return interest
    }

    /// Whether input is read now: not while answering, unless the body streams to a consumer
    /// that keeps up.
    var readsInput: Bool {
        switch phase {
        case .idle, .readingHead, .readingBody: true
        case .responding: bodyStreams && !bodyPace.isPaused
        case .closed: false
        }
    }

    /// Whether `requestID` is the request being answered and its answer is not complete.
    func isAnswering(_ requestID: UInt64) -> Bool {
        requestID == exchange.requestID && phase == .responding && !exchange.responseComplete
    }

    // MARK: - Input

    /// Bytes arrived: an idle connection starts reading a request head.
    mutating func inputArrived() {
        guard phase == .idle else { return }
        phase = .readingHead
        // The first request's header clock has run since accept: waiting before the first byte
        // must not buy a client a second header timeout (slow-loris).
        if exchange.requestID != 0 || deadline == 0 { setDeadline(timeouts.headerSeconds, .header) }
    }

    /// The parser took every byte and waits for more: a body's idle clock starts again.
    mutating func parserNeedsMore() {
        if phase == .readingBody || (bodyStreams && !bodyPace.isPaused) { setBodyDeadline() }
    }

    /// A request head was parsed. `bodyLimit`: the largest body read for it; `streamsBody`: the
    /// handler gets the request now and reads the body as it arrives.
    mutating func headReceived(_ head: HTTPRequestHead, bodyLimit: Int, streamsBody: Bool) -> HTTPConnectionActions {
        guard phase != .closed else { return HTTPConnectionActions() }
        phase = .readingBody
        upcoming = HTTPExchange.Request(head)
        bodyPace.start(at: clock.nanoseconds)
        setBodyDeadline()
        var actions = HTTPConnectionActions()
        if head.expectsContinue, head.version == .http1_1, Self.bodyMayFollow(head.framing, limit: bodyLimit) {
            actions.append(.sendContinue)
        }
        if streamsBody { actions.append(dispatch(streamingBody: true)) }
        return actions
    }

    /// Decoded body bytes arrived.
    mutating func bodyBytesReceived(_ count: Int) {
        bodyPace.count(count)
    }

    /// The body's consumer is behind: no reading and no timer until it catches up.
    mutating func bodyConsumerPaused() {
        guard bodyStreams else { return }
        bodyPace.pause(at: clock.nanoseconds)
        deadline = 0
        reading = false
    }

    /// The consumer caught up: reading goes on, and its wait is not charged to the client.
    mutating func bodyConsumerResumed() {
        guard phase == .responding, bodyStreams, bodyPace.isPaused else { return }
        bodyPace.resume(at: clock.nanoseconds)
        setBodyDeadline()
        reading = true
    }

    /// The request ended: a buffered one goes to the handler; a streamed one's consumer learns it.
    mutating func messageEnded() -> HTTPConnectionActions {
        guard phase != .closed else { return HTTPConnectionActions() }
        guard bodyStreams else { return HTTPConnectionActions(dispatch(streamingBody: false)) }
        bodyStreams = false
        deadline = 0
        reading = false
        var actions = HTTPConnectionActions(.finishBodyStream)
        if exchange.responseComplete, !writePending { actions.append(contentsOf: finishExchange().actions) }
        return actions
    }

    /// The parser rejected the input.
    mutating func parseFailed(_ status: HTTPStatus, reason: String) -> HTTPConnectionActions {
        guard phase != .closed else { return HTTPConnectionActions() }
        var actions = HTTPConnectionActions()
        if bodyStreams {
            bodyStreams = false
            actions.append(.failBodyStream(status, reason: reason))
            // The answer has begun: only closing tells the client.
            if exchange.responseStarted {
                actions.append(contentsOf: closing())
                return actions
            }
        }
        actions.append(contentsOf: respondWithError(status, reason: reason))
        return actions
    }

    /// The peer shut down its sending side (EPOLLRDHUP), or closed altogether: the two look the
    /// same until a write. What it sent is read and answered; a streamed answer sends its probe (a
    /// long-poll's heartbeat), so that a client really gone resets the connection.
    mutating func peerClosedInput() -> HTTPPeerClosedInput? {
        guard !inputClosed else { return nil }
        inputClosed = true
        switch phase {
        case .responding where !bodyStreams:
            return exchange.streaming && !exchange.responseComplete ? .sendProbe : nil
        case .closed:
            return nil
        case .idle, .readingHead, .readingBody, .responding:
            // What the peer sent before its FIN is read (EPOLLIN stays raised until the end).
            return .readInput
        }
    }

    /// The peer's input ended (a read returned 0): answer what was received, then close.
    /// `hasPendingInput`: saved bytes may hold requests.
    mutating func inputEnded(hasPendingInput: Bool) -> HTTPConnectionActions {
        inputClosed = true
        if bodyStreams { return closing() }  // a streamed body cut short
        reading = false
        return closeIfNothingToAnswer(hasPendingInput: hasPendingInput)
    }

    /// With the input closed: close unless a request is being answered or saved bytes may hold one.
    mutating func closeIfNothingToAnswer(hasPendingInput: Bool) -> HTTPConnectionActions {
        guard inputClosed else { return HTTPConnectionActions() }
        switch phase {
        case .idle where !hasPendingInput, .readingHead, .readingBody:
            return closing()  // nothing left, or a request that can no longer be completed
        case .idle:
            return HTTPConnectionActions(.resumeInput)
        case .responding, .closed:
            return HTTPConnectionActions()
        }
    }

    // MARK: - Output

    /// The socket is full: queued output waits for room.
    mutating func outputBlocked() {
        if phase != .closed { writePending = true }
    }

    /// Every queued byte is on the wire: a complete answer ends its exchange.
    mutating func outputDrained() -> HTTPExchangeEnd? {
        writePending = false
        guard phase == .responding, exchange.responseComplete else { return nil }
        return finishExchange()
    }

    /// The handler starts the answer to `requestID`; nil when that is not the request being
    /// answered or it has its answer already. See `HTTPExchange.startResponse`.
    mutating func startResponse(requestID: UInt64, streamed: Bool, contentLength: Int?, closeRequested: Bool) -> HTTPExchange.ResponseHead? {
        guard requestID == exchange.requestID, phase == .responding, !exchange.responseStarted else { return nil }
        return exchange.startResponse(streamed: streamed, contentLength: contentLength, closeRequested: closeRequested || draining)
    }

    /// Whether the streamed answer to `requestID` takes body bytes.
    func acceptsBody(_ requestID: UInt64) -> Bool {
        requestID == exchange.requestID && phase == .responding && exchange.acceptsBody
    }

    /// How `count` body bytes of the streamed answer to `requestID` are sent; nil: they are not.
    mutating func frameBody(_ count: Int, requestID: UInt64) -> HTTPExchange.BodyFraming? {
        guard acceptsBody(requestID) else { return nil }
        return exchange.frameBody(count)
    }

    /// The handler ends its streamed answer to `requestID`; nil when that is not one under way.
    mutating func finishResponse(requestID: UInt64) -> HTTPExchange.End? {
        guard acceptsBody(requestID) else { return nil }
        return exchange.finishResponse()
    }

    // MARK: - Timers, draining, closing

    /// The running deadline, once it has passed: what its timer asks for. Nothing before.
    mutating func deadlinePassed() -> HTTPConnectionActions {
        guard deadline != 0, clock.nanoseconds >= deadline else { return HTTPConnectionActions() }
        deadline = 0
        switch phase {
        case .idle:
            return closing()
        case .readingHead, .readingBody:
            return respondWithError(.requestTimeout, reason: timeouts.reason(timer))
        case .responding:
            // The only timer while answering: a streamed request body that stalled.
            guard bodyStreams, !bodyPace.isPaused else { return HTTPConnectionActions() }
            bodyStreams = false
            let reason = timeouts.reason(timer)
            var actions = HTTPConnectionActions(.failBodyStream(.requestTimeout, reason: reason))
            actions.append(contentsOf: exchange.responseStarted ? closing() : respondWithError(.requestTimeout, reason: reason))
            return actions
        case .closed:
            return HTTPConnectionActions()
        }
    }

    /// Server shutdown: a busy connection closes after its answer; an idle one closes now, or after
    /// `idleGraceSeconds` (sooner if its keep-alive ends first), answering with `Connection: close`
    /// a request that arrives meanwhile. A proxy may be sending one on that kept-alive connection at
    /// this very moment, and it does not retry a POST on a connection the server closed.
    mutating func drain(idleGraceSeconds: Double = 0) -> HTTPConnectionClosing? {
        switch phase {
        case .idle:
            guard idleGraceSeconds > 0 else { return close() }
            draining = true
            let graceEnds = clock.nanoseconds + HTTPConnectionTimeouts.nanoseconds(idleGraceSeconds)
            if deadline == 0 || graceEnds < deadline {
                deadline = graceEnds
                // A fresh connection's first head is still under its header clock.
                if exchange.requestID != 0 { timer = .keepAlive }
            }
            return nil
        case .readingHead, .readingBody, .responding:
            draining = true
            return nil
        case .closed:
            return nil
        }
    }

    /// The connection ends, whatever it was doing (a reset, a failed read or write, or a decision
    /// of this state). A handler still answering is told.
    mutating func close() -> HTTPConnectionClosing? {
        guard phase != .closed else { return nil }
        let wasAnswering = phase == .responding && !exchange.responseComplete
        closedAfterAnswer = phase == .responding && exchange.responseComplete && !writePending && !inputClosed
        phase = .closed
        deadline = 0
        bodyStreams = false
        reading = false
        writePending = false
        return HTTPConnectionClosing(cancelsHandler: wasAnswering)
    }

    /// `close` as actions, for events with more outcomes than closing.
    private mutating func closing() -> HTTPConnectionActions {
        close()?.actions ?? HTTPConnectionActions()
    }

    // MARK: - Transitions

    private mutating func dispatch(streamingBody: Bool) -> HTTPConnectionAction {
        phase = .responding
        deadline = 0
        exchange = HTTPExchange(after: exchange, upcoming, draining: draining)
        bodyStreams = streamingBody
        reading = streamingBody
        return .dispatch
    }

    private mutating func respondWithError(_ status: HTTPStatus, reason: String) -> HTTPConnectionActions {
        phase = .responding
        deadline = 0
        exchange = .error(after: exchange)
        // Nothing more is read: with EPOLLIN left on, unread input would wake the loop on every
        // wait while an answer the client does not read waits for room.
        reading = false
        return HTTPConnectionActions(.respondWithError(status, reason: reason))
    }

    /// The answer is on the wire: close, or go back to waiting for the next request.
    private mutating func finishExchange() -> HTTPExchangeEnd {
        // Answered before the request body ended (a refusal): the rest of the body is still on
        // the wire, so the connection cannot carry another request.
        if bodyStreams || !exchange.keepAlive || draining {
            _ = close()  // the answer is complete: no handler to tell
            return .close
        }
        phase = .idle
        setDeadline(timeouts.keepAliveSeconds, .keepAlive)
        // After the peer's FIN, reading goes on to the end of its input: requests still in the
        // kernel are answered, and the end of input closes the connection (`inputEnded`).
        reading = true
        return .awaitNextRequest
    }

    private mutating func setDeadline(_ seconds: Double, _ timer: HTTPConnectionTimer) {
        deadline = clock.nanoseconds + HTTPConnectionTimeouts.nanoseconds(seconds)
        self.timer = timer
    }

    private mutating func setBodyDeadline() {
        (deadline, timer) = bodyPace.deadline(now: clock.nanoseconds, timeouts)
    }

    /// RFC 9110 §10.1.1: `100 Continue` unless the body is already known to be refused (or absent).
    private static func bodyMayFollow(_ framing: BodyFraming, limit: Int) -> Bool {
        switch framing {
        case .none: false
        case .length(let length): length <= limit
        case .chunked: true
        }
    }
}
