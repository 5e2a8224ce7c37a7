import CLinux
import Glibc
import NimbusSupport

/// One client connection on its event loop: reads and parses requests, hands each complete
/// request to the handler, writes the answer, and keeps the connection's timers.
///
/// Requests are answered strictly in order: while one is being answered the connection stops
/// reading (pipelined bytes wait in the kernel or in `pending`, and bytes read later always go
/// behind `pending`). When the peer shuts down its sending side, everything it sent is still
/// answered before the connection closes; only a reset or a failed write means it is gone.
final class HTTPConnection: @unchecked Sendable {
    // @unchecked: every member is touched only on the owning loop thread; other threads reach a
    // connection solely through `EventLoop.execute` (see HTTPResponseWriter).
    enum State {
        /// Waiting for the first byte of a request (keep-alive idle).
        case idle
        case readingHead
        case readingBody
        /// The handler has the request; no reading, no timers.
        case responding
        case closed
    }

    let descriptor: Int32
    /// Where the connection comes from (given to every request).
    let peer: PeerAddress
    unowned let loop: EventLoop
    private(set) var state: State = .idle
    private var parser: HTTPParser
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// Input read but not yet parsed, kept while a request is being answered.
    private var pending: [UInt8] = []
    private var outbound: [UInt8] = []
    /// Bodies up to this size are copied behind their head and sent in one piece.
    private static let copiedBodyBytes = 16 * 1024
    private var outboundOffset = 0
    private var interest: UInt32
    /// Monotonic deadline in ns for the current timer, 0 when none runs.
    private(set) var deadline: UInt64 = 0
    private var deadlineAnswers408 = false
    /// The body's minimum rate: when its clock started (moved on by the time the handler paused
    /// reading), how many bytes came, and whether the current deadline is the rate's.
    private var bodyStartedAt: UInt64 = 0
    private var bodyReceived = 0
    private var bodyPausedAt: UInt64 = 0
    private var deadlineIsBodyRate = false

    // The request being answered.
    private(set) var requestID: UInt64 = 0
    private var keepAlive = true
    private var isHeadRequest = false
    private var requestVersion: HTTPVersion = .http1_1
    private var responseStarted = false
    private var responseComplete = false
    private var streaming = false
    private var closeAfterResponse = false
    private var cancelHandler: (@Sendable () -> Void)?
    /// The body of the request being answered, while it still streams in (uploads).
    private var bodyStream: HTTPBodyStream?
    /// Reading paused because the body consumer is behind.
    private var bodyPaused = false
    /// Bytes left to send of a fixed-length streamed response (nil: chunked or none).
    private var fixedLengthRemaining: Int?
    /// A writer waiting for the outbound buffer to drain (download backpressure).
    private var drainWaiter: CheckedContinuation<Bool, Never>?
    /// The peer shut down its sending side (FIN read): no request comes after those received.
    private var inputClosed = false
    /// Sent when the input closes during the streamed answer that registered it (a heartbeat).
    private var inputClosedProbe: [UInt8]?
    static let outboundHighWatermark = 1 << 20

    init(descriptor: Int32, peer: PeerAddress, loop: EventLoop) {
        self.descriptor = descriptor
        self.peer = peer
        self.loop = loop
        parser = HTTPParser(limits: loop.server.configuration.parserLimits)
        interest = EventLoop.epollIn | EventLoop.epollRDHUP
    }

    var configuration: HTTPServer.Configuration { loop.server.configuration }

    func start() {
        // The first request must begin within the header timeout (slow-loris protection).
        setDeadline(seconds: configuration.headerTimeoutSeconds, answers408: false)
    }

    // MARK: - Events

    func handle(events: UInt32) {
        if events & (EventLoop.epollHUP | EventLoop.epollErr) != 0 {
            close()
            return
        }
        if events & EventLoop.epollOut != 0 {
            flush()
            if state == .closed { return }
        }
        if events & EventLoop.epollIn != 0, state != .responding || (bodyStream != nil && !bodyPaused) {
            readAvailable()
            if state == .closed { return }
        }
        if events & EventLoop.epollRDHUP != 0 {
            peerClosedInput()
        }
    }

    /// The peer shut down its sending side (EPOLLRDHUP), or closed altogether: the two look the
    /// same until a write. Requests it sent are still answered (docs/api.md: a half-closing client gets
    /// every answer); reading goes on until the end of its input, then the connection closes once
    /// nothing is left to answer. A streamed answer sends its probe (a long-poll's heartbeat) so
    /// that a client that is really gone resets the connection, which cancels the request.
    private func peerClosedInput() {
        guard !inputClosed else { return }
        inputClosed = true
        setInterest(interest)  // drops EPOLLRDHUP, which stays raised from now on
        switch state {
        case .responding where bodyStream == nil:
            if streaming, !responseComplete, let probe = inputClosedProbe { writeChunk(probe, requestID: requestID) }
        case .closed:
            break
        default:
            // What the peer sent before its FIN is read (EPOLLIN stays raised until the end).
            readAvailable()
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
                if state == .closed || (state == .responding && (bodyStream == nil || bodyPaused)) { return }
                if count < buffer.count && !inputClosed { return }
            case .wouldBlock:
                return
            case .closed:
                endOfInput()
                return
            case .failed:
                close()
                return
            }
        }
    }

    /// The peer's input ended (read returned 0): answer what was received, then close.
    private func endOfInput() {
        inputClosed = true
        if bodyStream != nil {
            close()  // a streamed body cut short
            return
        }
        setInterest(interest & ~EventLoop.epollIn)
        closeIfNothingToAnswer()
    }

    /// With the input closed: close unless a request is being answered or saved bytes may hold one.
    private func closeIfNothingToAnswer() {
        guard inputClosed else { return }
        switch state {
        case .idle where pending.isEmpty, .readingHead, .readingBody:
            close()  // nothing left, or a request that can no longer be completed
        case .idle:
            resume()
        case .responding, .closed:
            break
        }
    }

    /// Resumes parsing input that arrived while the previous request was answered.
    func resume() {
        guard state == .idle, !pending.isEmpty else { return }
        let input = pending
        pending = []
        input.withUnsafeBytes { process($0) }
        if inputClosed, state != .responding, pending.isEmpty { closeIfNothingToAnswer() }
    }

    /// Registers the bytes `peerClosedInput` sends during a streamed answer.
    func setInputClosedProbe(_ bytes: [UInt8], requestID: UInt64) {
        guard requestID == self.requestID, state == .responding, !responseComplete else { return }
        inputClosedProbe = bytes
        if inputClosed, streaming { writeChunk(bytes, requestID: requestID) }
    }

    /// Feeds bytes to the parser until it needs more, a request is complete, or input is bad.
    private func process(_ input: UnsafeRawBufferPointer) {
        var offset = 0
        if state == .idle, !input.isEmpty {
            state = .readingHead
            if requestID == 0, deadline != 0 {
                // The first request's header clock has run since accept: waiting before the
                // first byte must not buy a client a second header timeout (slow-loris).
                deadlineAnswers408 = true
            } else {
                setDeadline(seconds: configuration.headerTimeoutSeconds, answers408: true)
            }
        }
        while true {
            let (consumed, event) = parser.parse(UnsafeRawBufferPointer(rebasing: input[offset...]))
            let sliceStart = offset
            offset += consumed
            switch event {
            case .needMore:
                if state == .readingBody || (bodyStream != nil && !bodyPaused) {
                    setBodyDeadline()
                }
                return
            case .head(let parsedHead):
                head = parsedHead
                body = []
                state = .readingBody
                bodyStartedAt = monotonicNanoseconds()
                bodyReceived = 0
                setBodyDeadline()
                let streamLimit = parsedHead.framing == .none ? nil : configuration.bodyStreamLimit(parsedHead)
                if let streamLimit { parser.maxBodyBytes = streamLimit }
                if parsedHead.expectsContinue, parsedHead.version == .http1_1 {
                    sendContinueIfBodyFits(parsedHead)
                }
                if streamLimit != nil {
                    // The handler gets the request now and reads the body as it arrives.
                    let stream = HTTPBodyStream(resumeReading: { [loop, self] in loop.execute { self.resumeBodyReading() } })
                    dispatch(bodyStream: stream)
                }
            case .body(let range):
                let absolute = UnsafeRawBufferPointer(rebasing: input[(sliceStart + range.lowerBound)..<(sliceStart + range.upperBound)])
                bodyReceived += absolute.count
                if let stream = bodyStream {
                    if !stream.append(Array(absolute)) {
                        bodyPaused = true
                        bodyPausedAt = monotonicNanoseconds()
                        deadline = 0
                        setInterest(EventLoop.epollRDHUP | (outboundOffset < outbound.count ? EventLoop.epollOut : 0))
                    }
                } else {
                    body.append(contentsOf: absolute)
                }
            case .messageEnd:
                if offset < input.count {
                    pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[offset...]))
                }
                if let stream = bodyStream {
                    stream.finish()
                    bodyStream = nil
                    deadline = 0
                    setInterest(EventLoop.epollRDHUP | (outboundOffset < outbound.count ? EventLoop.epollOut : 0))
                    if responseComplete, outboundOffset >= outbound.count { finishExchange() }
                } else {
                    dispatch()
                }
                return
            case .error(let error):
                if let stream = bodyStream {
                    stream.fail(HTTPBodyStream.Failure(reason: error.reason, status: error.status))
                    bodyStream = nil
                    if responseStarted {
                        close()
                        return
                    }
                }
                respondWithError(status: error.status, reason: error.reason)
                return
            }
        }
    }

    /// RFC 9110 §10.1.1: answer `100-continue` unless we already know the body will be refused.
    private func sendContinueIfBodyFits(_ head: HTTPRequestHead) {
        if case .length(let length) = head.framing, length > parser.maxBodyBytes { return }
        if case .none = head.framing { return }
        outbound.append(contentsOf: HTTPResponseHeadEncoder.continueHead)
        flush()
    }

    // MARK: - Answering

    private func dispatch(bodyStream stream: HTTPBodyStream? = nil) {
        guard let head else { return }
        state = .responding
        deadline = 0
        requestID &+= 1
        keepAlive = head.keepAlive && !loop.draining
        closeAfterResponse = false
        isHeadRequest = head.method == "HEAD"
        requestVersion = head.version
        responseStarted = false
        responseComplete = false
        streaming = false
        cancelHandler = nil
        inputClosedProbe = nil
        fixedLengthRemaining = nil
        var request = HTTPRequest(head: head, body: body)
        request.bodyStream = stream
        request.peer = peer
        bodyStream = stream
        bodyPaused = false
        self.head = nil
        body = []
        let reading = stream == nil ? 0 : EventLoop.epollIn
        setInterest(reading | EventLoop.epollRDHUP | (outboundOffset < outbound.count ? EventLoop.epollOut : 0))
        let writer = HTTPResponseWriter(connection: self, requestID: requestID)
        loop.server.handle(request, writer)
    }

    func setCancelHandler(_ handler: @escaping @Sendable () -> Void, requestID: UInt64) {
        guard requestID == self.requestID, state == .responding, !responseComplete else { return }
        cancelHandler = handler
    }

    func respond(_ response: HTTPResponse, requestID: UInt64) {
        guard requestID == self.requestID, state == .responding, !responseStarted else { return }
        responseStarted = true
        responseComplete = true
        cancelHandler = nil
        var head = serializeHead(response.status, response.headers, contentLength: response.body.count)
        let bodyAllowed = !isHeadRequest && HTTPResponseHeadEncoder.hasContent(response.status)
        guard bodyAllowed, response.body.count > Self.copiedBodyBytes, outbound.isEmpty else {
            if bodyAllowed { head.append(contentsOf: response.body) }
            outbound.append(contentsOf: head)
            flush()
            return
        }
        // A large body and nothing queued: the socket takes the head and the body from where they
        // lie, and only what it leaves is queued (the body itself, not a copy, unless the head
        // did not fit).
        let body = response.body
        let result = head.withUnsafeBytes { head in body.withUnsafeBytes { body in Socket.send(descriptor, head, body) } }
        switch result {
        case .bytes(let count) where count >= head.count:
            outbound = body
            outboundOffset = count - head.count
        case .bytes(let count):
            outbound = Array(head[count...]) + body
        case .wouldBlock:
            outbound = head + body
        case .closed, .failed:
            close()
            return
        }
        flush()
    }

    func startStreaming(status: HTTPStatus, headers: HTTPHeaders, contentLength: Int?, requestID: UInt64) {
        guard requestID == self.requestID, state == .responding, !responseStarted else { return }
        responseStarted = true
        streaming = true
        fixedLengthRemaining = contentLength
        // HTTP/1.0 has no chunked coding: the body ends when the connection closes.
        if requestVersion == .http1_0 && contentLength == nil { keepAlive = false }
        outbound.append(contentsOf: serializeHead(status, headers, contentLength: contentLength))
        if isHeadRequest, contentLength != nil {
            // HEAD: the length is announced, no body follows.
            responseComplete = true
            cancelHandler = nil
        }
        flush()
    }

    /// Queues body bytes and calls back (on the loop) when the outbound buffer has room again;
    /// false when the connection is gone.
    func write(_ bytes: [UInt8], requestID: UInt64, resume: CheckedContinuation<Bool, Never>) {
        guard requestID == self.requestID, state == .responding, streaming, !responseComplete else {
            resume.resume(returning: false)
            return
        }
        writeChunk(bytes, requestID: requestID)
        if state == .closed {
            resume.resume(returning: false)
        } else if outbound.count - outboundOffset > Self.outboundHighWatermark {
            drainWaiter = resume
        } else {
            resume.resume(returning: true)
        }
    }

    func writeChunk(_ bytes: [UInt8], requestID: UInt64) {
        guard requestID == self.requestID, state == .responding, streaming, !responseComplete, !bytes.isEmpty, !isHeadRequest else { return }
        if let remaining = fixedLengthRemaining {
            let count = min(bytes.count, remaining)
            outbound.append(contentsOf: bytes[0..<count])
            fixedLengthRemaining = remaining - count
        } else if requestVersion == .http1_1 {
            outbound.append(contentsOf: String(bytes.count, radix: 16).utf8)
            outbound.append(contentsOf: [13, 10])
            outbound.append(contentsOf: bytes)
            outbound.append(contentsOf: [13, 10])
        } else {
            outbound.append(contentsOf: bytes)
        }
        flush()
    }

    func finishStreaming(requestID: UInt64) {
        guard requestID == self.requestID, state == .responding, streaming, !responseComplete else { return }
        if let remaining = fixedLengthRemaining, remaining > 0 {
            // Fewer bytes than announced: the framing is broken, only closing tells the client.
            close()
            return
        }
        responseComplete = true
        cancelHandler = nil
        if requestVersion == .http1_1, !isHeadRequest, fixedLengthRemaining == nil {
            outbound.append(contentsOf: "0\r\n\r\n".utf8)
        }
        flush()
    }

    /// The body consumer caught up: read the socket again.
    func resumeBodyReading() {
        guard state == .responding, bodyStream != nil, bodyPaused else { return }
        bodyPaused = false
        bodyStartedAt += monotonicNanoseconds() - bodyPausedAt  // the handler's wait is not the client's
        setBodyDeadline()
        setInterest(EventLoop.epollIn | EventLoop.epollRDHUP | (outboundOffset < outbound.count ? EventLoop.epollOut : 0))
    }

    /// Answers a protocol error (parse error, timeout) and closes after writing it.
    private func respondWithError(status: HTTPStatus, reason: String) {
        state = .responding
        deadline = 0
        requestID &+= 1
        keepAlive = false
        isHeadRequest = false
        requestVersion = .http1_1
        responseStarted = false
        streaming = false
        pending = []
        respond(configuration.errorResponse(status, reason), requestID: requestID)
    }

    private func serializeHead(_ status: HTTPStatus, _ headers: HTTPHeaders, contentLength: Int?) -> [UInt8] {
        if HTTPResponseHeadEncoder.asksToClose(headers) || closeAfterResponse || loop.draining { keepAlive = false }
        var head: [UInt8] = []
        HTTPResponseHeadEncoder.encode(status, headers, version: requestVersion, contentLength: contentLength,
                                       keepAlive: keepAlive, date: loop.cachedDateHeader, into: &head)
        return head
    }

    /// Writes what it can; waits for EPOLLOUT when the socket is full.
    private func flush() {
        while outboundOffset < outbound.count {
            let result = outbound.withUnsafeBytes { buffer in
                Socket.send(descriptor, UnsafeRawBufferPointer(rebasing: buffer[outboundOffset...]))
            }
            switch result {
            case .bytes(let count):
                outboundOffset += count
            case .wouldBlock:
                setInterest(interest | EventLoop.epollOut)
                return
            case .closed, .failed:
                close()
                return
            }
        }
        outbound.removeAll(keepingCapacity: outbound.count <= 4096)
        outboundOffset = 0
        if let waiter = drainWaiter {
            drainWaiter = nil
            waiter.resume(returning: true)
        }
        if interest & EventLoop.epollOut != 0 { setInterest(interest & ~EventLoop.epollOut) }
        if state == .responding, responseComplete {
            finishExchange()
        }
    }

    /// The answer is on the wire: close, or go back to reading the next request.
    private func finishExchange() {
        if bodyStream != nil {
            // Answered before the request body ended (a refusal): the rest of the body is still
            // on the wire, so the connection cannot carry another request.
            close()
            return
        }
        if !keepAlive || closeAfterResponse || loop.draining {
            close()
            return
        }
        state = .idle
        cancelHandler = nil
        inputClosedProbe = nil
        // After the peer's FIN, reading goes on to the end of its input (requests still in the
        // kernel are answered); the end of input closes the connection (`endOfInput`).
        setDeadline(seconds: configuration.keepAliveTimeoutSeconds, answers408: false)
        setInterest(EventLoop.epollIn | EventLoop.epollRDHUP)
        if !pending.isEmpty { loop.scheduleResume(self) }
    }

    // MARK: - Timers, draining, closing

    private func setDeadline(seconds: Double, answers408: Bool) {
        deadline = monotonicNanoseconds() + UInt64(max(seconds, 0) * 1_000_000_000)
        deadlineAnswers408 = answers408
        deadlineIsBodyRate = false
    }

    /// While a body arrives: the idle timeout from now, or the end of the time its bytes so far
    /// earn at the minimum rate (`bodyTimeoutSeconds` + received / `minBodyBytesPerSecond` from
    /// the head), whichever comes first.
    private func setBodyDeadline() {
        setDeadline(seconds: configuration.bodyTimeoutSeconds, answers408: true)
        let rate = configuration.minBodyBytesPerSecond
        guard rate > 0 else { return }
        let earned = max(configuration.bodyTimeoutSeconds, 0) + Double(bodyReceived) / rate
        let rateDeadline = bodyStartedAt &+ UInt64(min(earned, 1e9) * 1_000_000_000)
        if rateDeadline < deadline {
            deadline = max(rateDeadline, 1)
            deadlineIsBodyRate = true
        }
    }

    private var bodyTimeoutReason: String {
        deadlineIsBodyRate
            ? "The request body arrived slower than \(Self.format(configuration.minBodyBytesPerSecond)) bytes per second (after the first \(Self.format(configuration.bodyTimeoutSeconds)) seconds)."
            : "The request body stalled for more than \(Self.format(configuration.bodyTimeoutSeconds)) seconds."
    }

    /// A header, body or keep-alive timer ran out. Never called while answering (no timer then).
    func deadlineExpired() {
        deadline = 0
        switch state {
        case .readingHead, .readingBody:
            if deadlineAnswers408 {
                respondWithError(status: .requestTimeout, reason: state == .readingHead
                    ? "The request head was not received within \(Self.format(configuration.headerTimeoutSeconds)) seconds."
                    : bodyTimeoutReason)
            } else {
                close()
            }
        case .idle:
            close()
        case .responding:
            // The only timer while answering: a streamed request body that stalled.
            if let stream = bodyStream, !bodyPaused {
                let reason = bodyTimeoutReason
                stream.fail(HTTPBodyStream.Failure(reason: reason, status: .requestTimeout))
                bodyStream = nil
                if responseStarted { close() } else {
                    respondWithError(status: .requestTimeout, reason: reason)
                }
            }
        case .closed:
            break
        }
    }

    /// Server shutdown: idle connections close now, busy ones after their answer.
    func drain() {
        switch state {
        case .idle: close()
        case .readingHead, .readingBody, .responding: closeAfterResponse = true
        case .closed: break
        }
    }

    func close() {
        guard state != .closed else { return }
        let wasAnswering = state == .responding && !responseComplete
        state = .closed
        loop.unregister(self)
        Glibc.close(descriptor)
        loop.server.releaseConnectionSlot()
        outbound = []
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
        if wasAnswering { fireCancel() }
    }

    private func fireCancel() {
        let handler = cancelHandler
        cancelHandler = nil
        handler?()
    }

    private func setInterest(_ requested: UInt32) {
        // After the peer's FIN, EPOLLRDHUP would be raised on every wait: it is not watched.
        let events = inputClosed ? requested & ~EventLoop.epollRDHUP : requested
        guard events != interest, state != .closed else { return }
        interest = events
        loop.updateInterest(self, events: events)
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
