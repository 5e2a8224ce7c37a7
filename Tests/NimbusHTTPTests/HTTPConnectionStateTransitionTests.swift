import Testing
@testable import NimbusHTTP

/// The connection's other transitions, on a manual clock: pipelining, half-close, draining,
/// 100-continue, streamed bodies and answers, HEAD, HTTP/1.0, errors and closing.
@Suite struct HTTPConnectionStateTransitionTests {
    func makeState(_ timeouts: HTTPConnectionTimeouts = .test) -> ConnectionState {
        ConnectionState(clock: ManualClock(), timeouts: timeouts)
    }

    // MARK: - Pipelining and reading

    @Test func aCompleteRequestGoesToTheHandlerAndReadingWaitsForItsAnswer() {
        var state = makeState()
        #expect(state.interest == [.read, .peerClose])
        state.receiveGet()
        #expect(state.phase == .responding)
        #expect(state.requestID == 1)
        // Bytes left behind the request are kept by the connection, not read further.
        #expect(state.interest == [.peerClose])
        #expect(!state.readsInput)
        // Once the answer left, the connection waits for the next request and asks for the saved bytes.
        #expect(state.answer() == .awaitNextRequest)
        #expect(state.phase == .idle)
        #expect(state.interest == [.read, .peerClose])
        state.receiveGet()
        #expect(state.requestID == 2)
    }

    @Test func anAnswerTheSocketCannotTakeAtOnceEndsWhenTheOutputDrains() {
        var state = makeState()
        state.receiveGet()
        #expect(state.startResponse(requestID: 1, streamed: false, contentLength: 10, closeRequested: false) != nil)
        state.outputBlocked()
        #expect(state.interest == [.peerClose, .write])
        #expect(state.phase == .responding)
        #expect(state.outputDrained() == .awaitNextRequest)
        #expect(state.interest == [.read, .peerClose])
    }

    struct InputEndCase: Sendable, CustomTestStringConvertible {
        let name: String
        let setUp: @Sendable (inout ConnectionState) -> Void
        let hasPendingInput: Bool
        let expected: HTTPConnectionActions
        var testDescription: String { name }
    }

    static let inputEndCases: [InputEndCase] = [
        InputEndCase(name: "idle with nothing saved: close", setUp: { _ in }, hasPendingInput: false, expected: [.close]),
        InputEndCase(name: "idle with saved bytes: parse them now", setUp: { _ in }, hasPendingInput: true, expected: [.resumeInput]),
        InputEndCase(name: "in the middle of a head: close, it can never complete",
                     setUp: { $0.inputArrived() }, hasPendingInput: false, expected: [.close]),
        InputEndCase(name: "in the middle of a buffered body: close",
                     setUp: { $0.receiveHead(.post(10)) }, hasPendingInput: false, expected: [.close]),
        InputEndCase(name: "while answering: the answer goes out first",
                     setUp: { $0.receiveGet() }, hasPendingInput: true, expected: []),
        InputEndCase(name: "in the middle of a streamed body: close, cancelling the handler",
                     setUp: { $0.receiveHead(.post(10), streamsBody: true) }, hasPendingInput: false, expected: [.close, .cancelHandler]),
    ]

    @Test(arguments: inputEndCases) func theEndOfInput(_ row: InputEndCase) {
        var state = makeState()
        row.setUp(&state)
        #expect(state.inputEnded(hasPendingInput: row.hasPendingInput) == row.expected)
        #expect(state.inputClosed)
        #expect(!state.interest.contains(.read) && !state.interest.contains(.peerClose))
    }

    @Test func aHalfCloseWhileAnsweringIsAnsweredThenTheEndOfInputCloses() {
        var state = makeState()
        state.receiveGet()
        #expect(state.peerClosedInput() == nil, "a whole answer has no probe")
        #expect(state.interest == [], "EPOLLRDHUP stays raised after the FIN: no longer watched")
        #expect(state.answer() == .awaitNextRequest)
        #expect(state.interest == [.read])
        #expect(state.inputEnded(hasPendingInput: false) == [.close])
    }

    @Test func aHalfCloseDuringAStreamedAnswerSendsTheProbe() {
        var state = makeState()
        state.receiveGet()
        #expect(state.startStreaming() != nil)
        #expect(state.peerClosedInput() == .sendProbe)
        #expect(state.peerClosedInput() == nil, "once")
    }

    @Test(arguments: [false, true]) func aHalfCloseWhileReadingReadsTheRest(_ midHead: Bool) {
        var state = makeState()
        if midHead { state.inputArrived() }
        #expect(state.peerClosedInput() == .readInput)
        #expect(state.interest == [.read])
    }

    // MARK: - Draining

    @Test func drainingClosesAnIdleConnectionAtOnce() {
        var state = makeState()
        #expect(state.drain() == HTTPConnectionClosing(cancelsHandler: false))
        #expect(state.phase == .closed)
    }

    /// A proxy may be sending a request on its kept-alive connection as the server starts to shut
    /// down: within the grace it is answered (with `Connection: close`); after it, the idle
    /// connection closes; the grace never outlasts the keep-alive timeout.
    @Test func aDrainingIdleConnectionAnswersARequestWithinTheGraceThenCloses() {
        let clock = ManualClock()
        var state = ConnectionState(clock: clock, timeouts: .test)
        state.receiveGet()
        #expect(state.answer() == .awaitNextRequest)
        #expect(state.drain(idleGraceSeconds: 1) == nil)
        #expect(state.phase == .idle)
        clock.set(0.5)
        #expect(state.deadlinePassed().isEmpty)
        state.receiveGet()
        let head = state.startResponse(requestID: 2, streamed: false, contentLength: 0, closeRequested: false)
        #expect(head?.keepAlive == false, "the answer says Connection: close")
        #expect(state.outputDrained() == .close)

        var quiet = ConnectionState(clock: clock, timeouts: .test)
        quiet.receiveGet()
        #expect(quiet.answer() == .awaitNextRequest)
        #expect(quiet.drain(idleGraceSeconds: 1) == nil)
        clock.set(1.4)
        #expect(quiet.deadlinePassed().isEmpty)
        clock.set(1.6)
        #expect(quiet.deadlinePassed() == [.close], "an idle connection closes when the grace ends")
    }

    @Test func drainingClosesABusyConnectionAfterItsAnswer() {
        var state = makeState()
        state.receiveGet()
        #expect(state.drain() == nil)
        let head = state.startResponse(requestID: 1, streamed: false, contentLength: 0, closeRequested: false)
        #expect(head?.keepAlive == false, "the answer says Connection: close")
        #expect(state.outputDrained() == .close)
    }

    @Test func aRequestReadWhileDrainingIsNotKeptAlive() {
        var state = makeState()
        state.receiveHead(.post(4))
        #expect(state.drain() == nil)
        #expect(state.messageEnded() == [.dispatch])
        #expect(!state.exchange.keepAlive)
        #expect(state.answer() == .close)
    }

    // MARK: - 100-continue

    struct ContinueCase: Sendable, CustomTestStringConvertible {
        let name: String
        let head: HTTPRequestHead
        let bodyLimit: Int
        let streamsBody: Bool
        let expected: HTTPConnectionActions
        var testDescription: String { name }
    }

    static let continueCases: [ContinueCase] = [
        ContinueCase(name: "a body that fits", head: .post(10, expectsContinue: true), bodyLimit: 10, streamsBody: false, expected: [.sendContinue]),
        ContinueCase(name: "a body over the limit is refused without asking for it",
                     head: .post(11, expectsContinue: true), bodyLimit: 10, streamsBody: false, expected: []),
        ContinueCase(name: "a chunked body", head: HTTPRequestHead(method: "POST", target: "/", expectsContinue: true, framing: .chunked),
                     bodyLimit: 10, streamsBody: false, expected: [.sendContinue]),
        ContinueCase(name: "no body", head: HTTPRequestHead(method: "GET", target: "/", expectsContinue: true),
                     bodyLimit: 10, streamsBody: false, expected: []),
        ContinueCase(name: "HTTP/1.0 has no 100 Continue",
                     head: HTTPRequestHead(method: "POST", target: "/", version: .http1_0, expectsContinue: true, framing: .length(4)),
                     bodyLimit: 10, streamsBody: false, expected: []),
        ContinueCase(name: "not asked", head: .post(4), bodyLimit: 10, streamsBody: false, expected: []),
        ContinueCase(name: "a streamed body: continue, then the handler at once",
                     head: .post(1_000, expectsContinue: true), bodyLimit: 1 << 30, streamsBody: true, expected: [.sendContinue, .dispatch]),
    ]

    @Test(arguments: continueCases) func continueIsSentWhenTheBodyIsWanted(_ row: ContinueCase) {
        var state = makeState()
        #expect(state.receiveHead(row.head, bodyLimit: row.bodyLimit, streamsBody: row.streamsBody) == row.expected)
        #expect(state.phase == (row.streamsBody ? .responding : .readingBody))
    }

    // MARK: - Streamed request bodies

    @Test func aStreamedBodyReadsWhileTheConsumerKeepsUpAndPausesWhenItDoesNot() {
        var state = makeState()
        #expect(state.receiveHead(.post(1 << 22), streamsBody: true) == [.dispatch])
        #expect(state.bodyStreams && state.readsInput)
        #expect(state.interest == [.read, .peerClose])
        state.bodyConsumerPaused()
        #expect(!state.readsInput)
        #expect(state.interest == [.peerClose])
        state.bodyConsumerResumed()
        #expect(state.readsInput)
        #expect(state.interest == [.read, .peerClose])
    }

    struct StreamedEndCase: Sendable, CustomTestStringConvertible {
        let name: String
        /// After the streamed request was dispatched: the events, and the actions of the last one.
        let run: @Sendable (inout ConnectionState) -> HTTPConnectionActions
        let expected: HTTPConnectionActions
        let phaseAfter: HTTPConnectionPhase
        var testDescription: String { name }
    }

    static let streamedEndCases: [StreamedEndCase] = [
        StreamedEndCase(name: "the body ends before the answer: its consumer learns it, reading stops",
                        run: { $0.messageEnded() }, expected: [.finishBodyStream], phaseAfter: .responding),
        StreamedEndCase(name: "the body ends, then the answer leaves: the next request",
                        run: { state in _ = state.messageEnded(); return state.answer()?.actions ?? [] },
                        expected: [.awaitNextRequest], phaseAfter: .idle),
        StreamedEndCase(name: "the answer is queued when the body ends: the next request once it leaves",
                        run: { state in
                            _ = state.startResponse(requestID: 1, streamed: false, contentLength: 0, closeRequested: false)
                            state.outputBlocked()
                            #expect(state.messageEnded() == [.finishBodyStream])
                            return state.outputDrained()?.actions ?? []
                        },
                        expected: [.awaitNextRequest], phaseAfter: .idle),
        StreamedEndCase(name: "answered before the body ended (a refusal): the rest is on the wire, close",
                        run: { $0.answer()?.actions ?? [] }, expected: [.close], phaseAfter: .closed),
        StreamedEndCase(name: "a malformed body before the answer: the stream fails and the error is answered",
                        run: { $0.parseFailed(.badRequest, reason: "bad chunk") },
                        expected: [.failBodyStream(.badRequest, reason: "bad chunk"), .respondWithError(.badRequest, reason: "bad chunk")],
                        phaseAfter: .responding),
        StreamedEndCase(name: "a malformed body after the answer began: the stream fails and the connection closes",
                        run: { state in
                            _ = state.startStreaming()
                            return state.parseFailed(.contentTooLarge, reason: "too large")
                        },
                        expected: [.failBodyStream(.contentTooLarge, reason: "too large"), .close, .cancelHandler],
                        phaseAfter: .closed),
    ]

    @Test(arguments: streamedEndCases) func theEndOfAStreamedBody(_ row: StreamedEndCase) {
        var state = makeState()
        #expect(state.receiveHead(.post(100), streamsBody: true) == [.dispatch])
        #expect(row.run(&state) == row.expected)
        #expect(state.phase == row.phaseAfter)
    }

    // MARK: - Answers

    @Test func aParseErrorIsAnsweredUnderANewRequestIDAndCloses() {
        var state = makeState()
        state.inputArrived()
        #expect(state.parseFailed(.badRequest, reason: "bare LF") == [.respondWithError(.badRequest, reason: "bare LF")])
        #expect(state.requestID == 1)
        #expect(state.interest == [.peerClose], "no more reading")
        let head = state.startResponse(requestID: 1, streamed: false, contentLength: 0, closeRequested: false)
        #expect(head == HTTPExchange.ResponseHead(version: .http1_1, keepAlive: false, isHeadRequest: false))
        #expect(state.outputDrained() == .close)
    }

    @Test func aHandlersCallsForAnEarlierRequestAreIgnored() {
        var state = makeState()
        state.receiveGet()
        state.answer()
        state.receiveGet()
        #expect(!state.isAnswering(1))
        #expect(state.startResponse(requestID: 1, streamed: true, contentLength: nil, closeRequested: false) == nil)
        #expect(state.frameBody(5, requestID: 1) == nil)
        #expect(state.finishResponse(requestID: 1) == nil)
        #expect(state.isAnswering(2))
        #expect(state.startResponse(requestID: 2, streamed: false, contentLength: 0, closeRequested: false) != nil)
        #expect(state.startResponse(requestID: 2, streamed: false, contentLength: 0, closeRequested: false) == nil, "one answer")
    }

    @Test func connectionCloseFromTheHandlerClosesAfterTheAnswer() {
        var state = makeState()
        state.receiveGet()
        #expect(state.answer(closeRequested: true) == .close)
    }

    @Test func aStreamedAnswerToHeadWithALengthIsCompleteAtOnce() {
        var state = makeState()
        state.receiveGet(HTTPRequestHead(method: "HEAD", target: "/"))
        let head = state.startStreaming(contentLength: 50_000)
        #expect(head?.isHeadRequest == true)
        #expect(!state.isAnswering(1))
        #expect(state.frameBody(10, requestID: 1) == nil)
        #expect(state.outputDrained() == .awaitNextRequest)
    }

    @Test func aStreamedHTTP10AnswerWithoutLengthEndsWithTheConnection() {
        var state = makeState()
        state.receiveGet(HTTPRequestHead(method: "GET", target: "/", version: .http1_0, keepAlive: true))
        #expect(state.startStreaming()?.keepAlive == false)
        #expect(state.frameBody(5, requestID: 1) == .untilClose)
        #expect(state.finishResponse(requestID: 1) == .complete)
        #expect(state.outputDrained() == .close)
    }

    @Test func aKeptAliveHTTP10RequestStaysOpenWithAFixedLength() {
        var state = makeState()
        state.receiveGet(HTTPRequestHead(method: "GET", target: "/", version: .http1_0, keepAlive: true))
        #expect(state.startStreaming(contentLength: 3)?.keepAlive == true)
        #expect(state.frameBody(3, requestID: 1) == .fixedLength(3))
        #expect(state.finishResponse(requestID: 1) == .complete)
        #expect(state.outputDrained() == .awaitNextRequest)
    }

    struct StreamedAnswerCase: Sendable, CustomTestStringConvertible {
        let name: String
        let contentLength: Int?
        let writes: [Int]
        let framings: [HTTPExchange.BodyFraming?]
        let end: HTTPExchange.End
        var testDescription: String { name }
    }

    static let streamedAnswerCases: [StreamedAnswerCase] = [
        StreamedAnswerCase(name: "chunked, empty writes skipped, ends with the last chunk",
                           contentLength: nil, writes: [3, 0, 5], framings: [.chunked, nil, .chunked], end: .lastChunk),
        StreamedAnswerCase(name: "a fixed length takes no more than announced",
                           contentLength: 10, writes: [7, 7, 1], framings: [.fixedLength(7), .fixedLength(3), .fixedLength(0)], end: .complete),
        StreamedAnswerCase(name: "fewer bytes than announced: the framing is broken",
                           contentLength: 10, writes: [3], framings: [.fixedLength(3)], end: .tooShort),
    ]

    @Test(arguments: streamedAnswerCases) func aStreamedAnswersFraming(_ row: StreamedAnswerCase) {
        var state = makeState()
        state.receiveGet()
        #expect(state.startStreaming(contentLength: row.contentLength) != nil)
        #expect(row.writes.map { state.frameBody($0, requestID: 1) } == row.framings)
        #expect(state.finishResponse(requestID: 1) == row.end)
        #expect(state.isAnswering(1) == (row.end == .tooShort))
    }

    // MARK: - Closing

    struct CloseCase: Sendable, CustomTestStringConvertible {
        let name: String
        let setUp: @Sendable (inout ConnectionState) -> Void
        let expected: HTTPConnectionActions
        var testDescription: String { name }
    }

    static let closeCases: [CloseCase] = [
        CloseCase(name: "idle", setUp: { _ in }, expected: [.close]),
        CloseCase(name: "reading a head", setUp: { $0.inputArrived() }, expected: [.close]),
        CloseCase(name: "answering: the handler is cancelled", setUp: { $0.receiveGet() }, expected: [.close, .cancelHandler]),
        CloseCase(name: "streaming an answer: the handler is cancelled",
                  setUp: { state in state.receiveGet(); _ = state.startStreaming() }, expected: [.close, .cancelHandler]),
        CloseCase(name: "with the answer complete but not yet sent: nothing to cancel",
                  setUp: { state in
                      state.receiveGet()
                      _ = state.startResponse(requestID: 1, streamed: false, contentLength: 0, closeRequested: false)
                      state.outputBlocked()
                  },
                  expected: [.close]),
        CloseCase(name: "already closed: nothing", setUp: { _ = $0.close() }, expected: []),
    ]

    @Test(arguments: closeCases) func closing(_ row: CloseCase) {
        var state = makeState()
        row.setUp(&state)
        #expect((state.close()?.actions ?? []) == row.expected)
        #expect(state.phase == .closed)
        #expect(state.interest.isEmpty)
        #expect(!state.readsInput)
        #expect(state.deadline == 0)
    }

    @Test func aClosedConnectionIgnoresEvents() {
        var state = makeState()
        state.inputArrived()
        _ = state.close()
        #expect(state.receiveHead(.post(4), streamsBody: true).isEmpty)
        #expect(state.messageEnded().isEmpty)
        #expect(state.parseFailed(.badRequest, reason: "x").isEmpty)
        #expect(state.drain() == nil)
        #expect(state.peerClosedInput() == nil)
        #expect(state.phase == .closed)
    }

    @Test func actionsKeepTheirOrderInline() {
        var actions = HTTPConnectionActions()
        #expect(actions.isEmpty)
        actions.append(.failBodyStream(.requestTimeout, reason: "r"))
        actions.append(contentsOf: [.close, .cancelHandler])
        #expect(Array(actions) == [.failBodyStream(.requestTimeout, reason: "r"), .close, .cancelHandler])
    }
}
