import Testing
@testable import NimbusHTTP

/// A monotonic clock the test moves by hand.
final class ManualClock: MonotonicClock {
    static let start: UInt64 = 1_000 * 1_000_000_000
    var nanoseconds: UInt64 = ManualClock.start

    /// Moves to `seconds` after the start.
    func set(_ seconds: Double) {
        nanoseconds = ManualClock.start + HTTPConnectionTimeouts.nanoseconds(seconds)
    }
}

typealias ConnectionState = HTTPConnectionState<ManualClock>

extension HTTPConnectionTimeouts {
    /// Header 10 s, body 30 s, keep-alive 60 s, at least 100 body bytes per second.
    static let test = HTTPConnectionTimeouts(headerSeconds: 10, bodySeconds: 30, keepAliveSeconds: 60, minBodyBytesPerSecond: 100)
    /// The same without a minimum body rate.
    static let noMinimumRate = HTTPConnectionTimeouts(headerSeconds: 10, bodySeconds: 30, keepAliveSeconds: 60, minBodyBytesPerSecond: 0)
}

extension HTTPRequestHead {
    static let get = HTTPRequestHead(method: "GET", target: "/")
    static func post(_ length: Int, expectsContinue: Bool = false) -> HTTPRequestHead {
        HTTPRequestHead(method: "POST", target: "/", expectsContinue: expectsContinue, framing: .length(length))
    }
}

/// Short names for the events a test sends, as the connection sends them.
extension HTTPConnectionState {
    /// The first bytes of a request arrive and hold its whole head.
    @discardableResult
    mutating func receiveHead(_ head: HTTPRequestHead = .get, bodyLimit: Int = 1 << 20, streamsBody: Bool = false) -> HTTPConnectionActions {
        inputArrived()
        return headReceived(head, bodyLimit: bodyLimit, streamsBody: streamsBody)
    }

    /// A whole GET arrives and goes to the handler.
    mutating func receiveGet(_ head: HTTPRequestHead = .get) {
        receiveHead(head)
        #expect(messageEnded() == [.dispatch])
    }

    /// Body bytes arrive and the parser waits for more.
    mutating func receiveBody(_ count: Int) {
        bodyBytesReceived(count)
        parserNeedsMore()
    }

    /// The handler answers whole; what follows once the answer left.
    @discardableResult
    mutating func answer(closeRequested: Bool = false) -> HTTPExchangeEnd? {
        #expect(startResponse(requestID: requestID, streamed: false, contentLength: 2, closeRequested: closeRequested) != nil)
        return outputDrained()
    }

    /// The handler starts a streamed answer.
    mutating func startStreaming(contentLength: Int? = nil) -> HTTPExchange.ResponseHead? {
        startResponse(requestID: requestID, streamed: true, contentLength: contentLength, closeRequested: false)
    }
}

/// Every timer of the connection on a manual clock: one nanosecond before its deadline nothing
/// happens; at the deadline, what the timer is for (a silent close or a 408). No sleeps.
@Suite struct HTTPConnectionStateTests {
    static let headReason = "The request head was not received within 10 seconds."
    static let stallReason = "The request body stalled for more than 30 seconds."
    static let rateReason = "The request body arrived slower than 100 bytes per second (after the first 30 seconds)."

    struct TimerCase: Sendable, CustomTestStringConvertible {
        let name: String
        var timeouts: HTTPConnectionTimeouts = .test
        /// Brings a connection accepted at 0 s to the moment its timer under test runs.
        let setUp: @Sendable (inout ConnectionState, ManualClock) -> Void
        /// Seconds after accept.
        let deadline: Double
        let timer: HTTPConnectionTimer
        let expected: HTTPConnectionActions
        let phaseAfter: HTTPConnectionPhase
        var testDescription: String { name }
    }

    static let timerCases: [TimerCase] = [
        TimerCase(name: "first request: no byte within the header timeout from accept closes silently",
                  setUp: { _, _ in }, deadline: 10, timer: .header, expected: [.close], phaseAfter: .closed),
        TimerCase(name: "first request: a head begun late still has only the header timeout from accept, then 408",
                  setUp: { state, clock in clock.set(4); state.inputArrived() },
                  deadline: 10, timer: .header,
                  expected: [.respondWithError(.requestTimeout, reason: headReason)], phaseAfter: .responding),
        TimerCase(name: "keep-alive: an idle connection closes silently at the keep-alive timeout from its last answer",
                  setUp: { state, clock in
                      clock.set(1); state.receiveGet()
                      clock.set(2); #expect(state.answer() == .awaitNextRequest)
                  },
                  deadline: 62, timer: .keepAlive, expected: [.close], phaseAfter: .closed),
        TimerCase(name: "a later request's head is answered 408 at the header timeout from its first byte",
                  setUp: { state, clock in
                      clock.set(1); state.receiveGet()
                      clock.set(2); state.answer()
                      clock.set(7); state.inputArrived()
                  },
                  deadline: 17, timer: .header,
                  expected: [.respondWithError(.requestTimeout, reason: headReason)], phaseAfter: .responding),
        TimerCase(name: "a body that stalls is answered 408 at the body timeout from its last bytes",
                  setUp: { state, clock in
                      clock.set(1); state.receiveHead(.post(100_000))
                      clock.set(2); state.receiveBody(10_000)  // earns 1 + 30 + 100 s: the idle timeout comes first
                  },
                  deadline: 32, timer: .bodyIdle,
                  expected: [.respondWithError(.requestTimeout, reason: stallReason)], phaseAfter: .responding),
        TimerCase(name: "a body below the minimum rate is answered 408 at bodyStartedAt + bodyTimeout + received / rate",
                  setUp: { state, clock in
                      clock.set(1); state.receiveHead(.post(100_000))
                      clock.set(11); state.receiveBody(100)  // 1 + 30 + 100 / 100 = 32 s, before 11 + 30
                  },
                  deadline: 32, timer: .bodyRate,
                  expected: [.respondWithError(.requestTimeout, reason: rateReason)], phaseAfter: .responding),
        TimerCase(name: "a paused consumer's wait is not charged: the rate deadline moves by the pause",
                  setUp: { state, clock in
                      clock.set(1); #expect(state.receiveHead(.post(100_000), streamsBody: true) == [.dispatch])
                      state.parserNeedsMore()
                      clock.set(2); state.receiveBody(50)  // 1 + 30 + 0.5 = 31.5 s
                      #expect(state.deadline == ManualClock.start + 31_500_000_000 && state.timer == .bodyRate)
                      clock.set(3); state.bodyConsumerPaused()
                      #expect(state.deadline == 0)
                      clock.set(1_003); #expect(state.deadlinePassed().isEmpty)
                      state.bodyConsumerResumed()  // paused 1,000 s: 1,001 + 30 + 0.5
                  },
                  deadline: 1_031.5, timer: .bodyRate,
                  expected: [.failBodyStream(.requestTimeout, reason: rateReason), .respondWithError(.requestTimeout, reason: rateReason)],
                  phaseAfter: .responding),
        TimerCase(name: "a streamed body that stalls before the answer starts fails its stream and is answered 408",
                  timeouts: .noMinimumRate,
                  setUp: { state, clock in
                      clock.set(1); state.receiveHead(.post(100_000), streamsBody: true)
                      clock.set(2); state.receiveBody(10)
                  },
                  deadline: 32, timer: .bodyIdle,
                  expected: [.failBodyStream(.requestTimeout, reason: stallReason), .respondWithError(.requestTimeout, reason: stallReason)],
                  phaseAfter: .responding),
        TimerCase(name: "a streamed body that stalls while the answer streams fails its stream and closes, cancelling the handler",
                  timeouts: .noMinimumRate,
                  setUp: { state, clock in
                      clock.set(1); state.receiveHead(.post(100_000), streamsBody: true)
                      clock.set(2); #expect(state.startStreaming() != nil)
                      clock.set(3); state.receiveBody(10)
                  },
                  deadline: 33, timer: .bodyIdle,
                  expected: [.failBodyStream(.requestTimeout, reason: stallReason), .close, .cancelHandler],
                  phaseAfter: .closed),
    ]

    @Test(arguments: timerCases) func aTimerActsAtItsDeadlineAndNotOneNanosecondBefore(_ row: TimerCase) {
        let clock = ManualClock()
        var state = ConnectionState(clock: clock, timeouts: row.timeouts)
        row.setUp(&state, clock)
        #expect(state.deadline == ManualClock.start + HTTPConnectionTimeouts.nanoseconds(row.deadline))
        #expect(state.timer == row.timer)
        let phase = state.phase
        clock.nanoseconds = state.deadline - 1
        #expect(state.deadlinePassed().isEmpty)
        #expect(state.phase == phase)
        clock.nanoseconds += 1
        #expect(state.deadlinePassed() == row.expected)
        #expect(state.phase == row.phaseAfter)
        #expect(!state.interest.contains(.read), "a timed-out connection reads no more")
        #expect(state.deadline == 0)
        #expect(state.deadlinePassed().isEmpty, "a timer acts once")
    }

    @Test func aRequestBeingAnsweredHasNoTimer() {
        let clock = ManualClock()
        var state = ConnectionState(clock: clock, timeouts: .test)
        state.receiveGet()
        #expect(state.deadline == 0)
        clock.set(86_400)
        #expect(state.deadlinePassed().isEmpty)
        #expect(state.phase == .responding)
        #expect(state.answer() == .awaitNextRequest)
        #expect(state.deadline == clock.nanoseconds + 60_000_000_000)
    }

    @Test func aPausedBodyHasNoTimerHoweverLongItWaits() {
        let clock = ManualClock()
        var state = ConnectionState(clock: clock, timeouts: .test)
        state.receiveHead(.post(100_000), streamsBody: true)
        state.receiveBody(10)
        #expect(state.deadline != 0)
        state.bodyConsumerPaused()
        #expect(state.deadline == 0)
        #expect(!state.readsInput)
        clock.set(86_400 * 365)
        #expect(state.deadlinePassed().isEmpty)
        #expect(state.phase == .responding)
    }

    @Test func eachReadMovesABodysIdleDeadline() {
        let clock = ManualClock()
        var state = ConnectionState(clock: clock, timeouts: .noMinimumRate)
        clock.set(1)
        state.receiveHead(.post(1_000))
        #expect(state.deadline == ManualClock.start + 31_000_000_000)
        for second in 2...100 {
            clock.set(Double(second))
            state.receiveBody(1)
            #expect(state.deadline == clock.nanoseconds + 30_000_000_000)
        }
    }

    @Test func theMinimumRateIsMetByABodyThatKeepsUp() {
        let clock = ManualClock()
        var state = ConnectionState(clock: clock, timeouts: .test)
        state.receiveHead(.post(100_000))
        // 200 bytes a second for 100 s: the bytes always earn more time than the idle timeout gives.
        for second in 1...100 {
            clock.set(Double(second))
            state.receiveBody(200)
            #expect(state.timer == .bodyIdle)
            #expect(state.deadlinePassed().isEmpty)
        }
    }
}

/// Which closes linger (`closedAfterAnswer`): those right after a whole answer, while the client
/// may still be sending; not a close with nothing answered, nor one after the client's own end.
@Suite struct HTTPConnectionStateLingerTests {
    struct LingerCase: Sendable, CustomTestStringConvertible {
        let name: String
        let run: @Sendable (inout ConnectionState) -> Void
        let lingers: Bool
        var testDescription: String { name }
    }

    static let cases: [LingerCase] = [
        LingerCase(name: "an answer asking to close", run: { state in
            state.receiveGet()
            #expect(state.answer(closeRequested: true) == .close)
        }, lingers: true),
        LingerCase(name: "a refused body (413 before the body)", run: { state in
            state.receiveHead(.post(100))
            #expect(state.parseFailed(.contentTooLarge, reason: "too large") == [.respondWithError(.contentTooLarge, reason: "too large")])
            #expect(state.answer() == .close)
        }, lingers: true),
        LingerCase(name: "a head that timed out (408)", run: { state in
            state.inputArrived()
            state.clock.nanoseconds = state.deadline
            #expect(state.deadlinePassed() == [.respondWithError(.requestTimeout, reason: HTTPConnectionStateTests.headReason)])
            #expect(state.answer() == .close)
        }, lingers: true),
        LingerCase(name: "an idle keep-alive connection timing out", run: { state in
            state.receiveGet()
            _ = state.answer()
            state.clock.nanoseconds = state.deadline
            #expect(state.deadlinePassed() == [.close])
        }, lingers: false),
        LingerCase(name: "a client that shut down its side first", run: { state in
            state.receiveGet()
            _ = state.peerClosedInput()
            _ = state.answer()
            #expect(state.closeIfNothingToAnswer(hasPendingInput: false) == [.close])
        }, lingers: false),
        LingerCase(name: "a close while answering (the client went away)", run: { state in
            state.receiveGet()
            _ = state.close()
        }, lingers: false),
    ]

    @Test(arguments: cases) func closesAfterAWholeAnswerLinger(_ row: LingerCase) {
        var state = ConnectionState(clock: ManualClock(), timeouts: .test)
        row.run(&state)
        #expect(state.phase == .closed)
        #expect(state.closedAfterAnswer == row.lingers)
    }
}
