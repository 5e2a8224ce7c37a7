import Foundation
import NimbusHTTP
import NimbusSupport

/// Collects what the API writes and hands it over once the answer is complete; plays the client
/// the way a connection reports it: `clientGoesAway` runs the cancel handler (a reset, a closed
/// socket) and makes later writes fail, `clientClosesInput` sends the registered probe (a
/// half-close during a streamed answer).
final class CapturingSink: HTTPResponseSink, Sendable {
    /// One body write of a streamed answer and when it came.
    struct Chunk: Sendable {
        var bytes: [UInt8]
        var at: Date
    }

    private struct State {
        var answer = Answer(status: 0, headers: [:], body: [])
        var streaming = false
        var streamedAt: Date?
        var contentLength: Int?
        var chunks: [Chunk] = []
        var finished = false
        var gone = false
        var inputClosed = false
        var cancel: (@Sendable () -> Void)?
        var probe: [UInt8]?
        var waiter: CheckedContinuation<Answer, Never>?
        /// `write` calls made after the client went away.
        var writesAfterGone = 0
    }

    private let state = Lock(State())
    /// The client goes away once it has read this many body bytes (a download cut off).
    private let leaveAfterBytes: Int?

    init(leaveAfterBytes: Int? = nil) {
        self.leaveAfterBytes = leaveAfterBytes
    }

    func respond(_ response: HTTPResponse) {
        finish(Answer(status: response.status.code, headers: response.headers, body: response.body))
    }

    func startStreaming(status: HTTPStatus, headers: HTTPHeaders, contentLength: Int?) {
        state.withLock { state in
            guard !state.finished, !state.gone, !state.streaming else { return }
            state.answer.status = status.code
            state.answer.headers = headers
            state.streaming = true
            state.streamedAt = Date()
            state.contentLength = contentLength
        }
    }

    func write(_ bytes: [UInt8]) -> Bool {
        let (written, cancel) = state.withLock { state -> (Bool, (@Sendable () -> Void)?) in
            guard !state.gone else {
                state.writesAfterGone += 1
                return (false, nil)
            }
            Self.append(bytes, to: &state)
            guard let limit = leaveAfterBytes, state.answer.body.count >= limit else { return (true, nil) }
            state.gone = true
            defer { state.cancel = nil }
            return (true, state.cancel)
        }
        cancel?()
        return written
    }

    func writeChunk(_ bytes: [UInt8]) {
        state.withLock { Self.append(bytes, to: &$0) }
    }

    func finishStreaming(last: [UInt8]) {
        let answer = state.withLock { state -> Answer? in
            guard state.streaming else { return nil }
            Self.append(last, to: &state)
            return state.answer
        }
        if let answer { finish(answer) }
    }

    func probeWhenInputCloses(_ bytes: [UInt8]) {
        state.withLock { state in
            guard state.streaming, !state.finished, !state.gone else { return }
            state.probe = bytes
            if state.inputClosed { Self.append(bytes, to: &state) }
        }
    }

    func onCancel(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { state in
            guard !state.finished, !state.gone else { return }
            state.cancel = handler
        }
    }

    // MARK: - The client's side

    /// The client goes away before the answer is complete: the cancel handler runs (as the
    /// connection runs it on close), later writes go nowhere.
    func clientGoesAway() {
        let cancel = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.finished, !state.gone else { return nil }
            state.gone = true
            defer { state.cancel = nil }
            return state.cancel
        }
        cancel?()
    }

    /// The client shuts down its sending side: the probe registered for the streamed answer, if
    /// any, is sent at once (and on registration, if the input closed before it).
    func clientClosesInput() {
        state.withLock { state in
            state.inputClosed = true
            if let probe = state.probe, state.streaming, !state.finished, !state.gone { Self.append(probe, to: &state) }
        }
    }

    /// The status and headers of a streamed answer, and when they were given (nil: not yet).
    var streamedAt: Date? { state.withLock { $0.streamedAt } }
    var isFinished: Bool { state.withLock { $0.finished } }
    /// The length a streamed answer announced (`Content-Length`; nil: chunked); a whole answer's body length.
    var contentLength: Int? { state.withLock { $0.streaming ? $0.contentLength : $0.answer.body.count } }
    /// The body writes of a streamed answer so far.
    var chunks: [Chunk] { state.withLock { $0.chunks } }
    /// Body writes the handler made after the client went away (each answered false).
    var writesAfterGone: Int { state.withLock { $0.writesAfterGone } }
    /// The answer so far (status 0 before anything was given).
    var soFar: Answer { state.withLock { $0.answer } }

    /// The complete answer, once it is.
    func answer() async -> Answer {
        await withCheckedContinuation { continuation in
            let ready: Answer? = state.withLock { state in
                if state.finished { return state.answer }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private static func append(_ bytes: [UInt8], to state: inout State) {
        guard state.streaming, !state.finished, !state.gone, !bytes.isEmpty else { return }
        state.answer.body += bytes
        state.chunks.append(Chunk(bytes: bytes, at: Date()))
    }

    private func finish(_ answer: Answer) {
        let waiting: CheckedContinuation<Answer, Never>? = state.withLock { state in
            guard !state.finished, !state.gone else { return nil }
            state.finished = true
            state.answer = answer
            defer { state.waiter = nil }
            return state.waiter
        }
        waiting?.resume(returning: answer)
    }
}
