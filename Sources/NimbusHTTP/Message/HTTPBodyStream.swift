import NimbusSupport

/// A request body delivered piece by piece to an async consumer (uploads), never held whole.
///
/// The connection appends what it reads; past `highWatermark` buffered bytes it stops reading
/// the socket (TCP pushes back on the client) and resumes once the consumer has taken the buffer
/// below `lowWatermark`. If the client goes away or sends a malformed body, `next()` throws.
package final class HTTPBodyStream: Sendable {
    package struct Failure: Error, Sendable, CustomStringConvertible {
        package var reason: String
        /// The status the server answers when it rejected the body itself (413, 400), if any.
        package var status: HTTPStatus?

        package init(reason: String, status: HTTPStatus?) {
            self.reason = reason
            self.status = status
        }
        package var description: String { reason }
    }

    package static let highWatermark = 1 << 20
    static let lowWatermark = 256 << 10

    private struct State {
        var chunks: [[UInt8]] = []
        var buffered = 0
        var finished = false
        var failure: Failure?
        var waiter: CheckedContinuation<[UInt8]?, any Error>?
        var paused = false
    }

    private let state = Lock(State())
    /// Asks the connection (on its loop) to read again after a pause.
    private let resumeReading: @Sendable () -> Void

    /// `resumeReading` runs when the consumer caught up after a pause (in-process tests feed a
    /// stream of their own with `append`, `finish` and `fail`).
    package init(resumeReading: @escaping @Sendable () -> Void) {
        self.resumeReading = resumeReading
    }

    /// The next piece of the body; nil at its end.
    package func next() async throws -> [UInt8]? {
        try await withCheckedThrowingContinuation { continuation in
            let (outcome, resume): (Result<[UInt8]?, any Error>?, Bool) = state.withLock { state in
                if !state.chunks.isEmpty {
                    let chunk = state.chunks.removeFirst()
                    state.buffered -= chunk.count
                    let resume = state.paused && state.buffered < Self.lowWatermark
                    if resume { state.paused = false }
                    return (.success(chunk), resume)
                }
                if let failure = state.failure { return (.failure(failure), false) }
                if state.finished { return (.success(nil), false) }
                state.waiter = continuation
                let resume = state.paused
                state.paused = false
                return (nil, resume)
            }
            if resume { resumeReading() }
            if let outcome { continuation.resume(with: outcome) }
        }
    }

    // MARK: - Connection side (loop thread)

    /// Appends bytes; returns false when the connection should stop reading for now.
    package func append(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty else { return true }
        let (waiter, keepReading): (CheckedContinuation<[UInt8]?, any Error>?, Bool) = state.withLock { state in
            if let waiter = state.waiter {
                state.waiter = nil
                return (waiter, true)
            }
            state.chunks.append(bytes)
            state.buffered += bytes.count
            if state.buffered >= Self.highWatermark {
                state.paused = true
                return (nil, false)
            }
            return (nil, true)
        }
        waiter?.resume(returning: bytes)
        return keepReading
    }

    package func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, any Error>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    package func fail(_ failure: Failure) {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, any Error>? in
            guard !state.finished, state.failure == nil else { return nil }
            state.failure = failure
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: failure)
    }

    var isComplete: Bool { state.withLock { $0.finished } }
}
