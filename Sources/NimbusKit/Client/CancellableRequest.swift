import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request whose cancellation reaches URLSession from another queue.
///
/// `URLSession.data(for:)` cancels its `URLSessionTask` from the cancelled Swift task's
/// cancellation handler, which runs while the concurrency runtime holds that task's status lock;
/// `URLSessionTask.cancel()` then waits (`DispatchQueue.sync`) for the session's queue. When
/// that queue is finishing the same request at that moment, it waits for the status lock to resume
/// the task: both wait forever (swift-corelibs-foundation; seen in CI, `SyncEngine.stopLive`
/// cancelling a long-poll while the server closed it). Here the handler only hands the
/// cancellation to another queue.
final class CancellableRequest: @unchecked Sendable {
    // @unchecked: `task` and `isCancelled` are only touched under `lock`.
    private let lock = NSLock()
    private var task: URLSessionTask?
    private var isCancelled = false
    /// The answer (or failure) arrived: cancelling now would only race URLSession's own
    /// clean-up of the task (swift-corelibs-foundation traps on a task no longer registered).
    private var isFinished = false

    /// The answer to `request`, as `session.data(for:)` gives it but at most `limit` bytes (the
    /// session's delegate is an `AnswerCollector`: `AnswerCollector.makeSession`); cancelling the
    /// calling task cancels the request (URLError.cancelled).
    static func data(_ session: URLSession, for request: URLRequest, limit: AnswerLimit = .small) async throws -> (Data, URLResponse) {
        let collected = try await run(session, request, limit: limit, into: nil)
        return (collected.data, collected.response)
    }

    /// The answer to `request`, at most `limit` bytes, its 2xx body taken by `download` as it
    /// arrives (the caller then finishes it); an error answer's body is the `Data`.
    static func download(_ session: URLSession, for request: URLRequest, limit: AnswerLimit,
                         into download: AssetDownload) async throws -> (Data, URLResponse) {
        let collected = try await run(session, request, limit: limit, into: download)
        return (collected.data, collected.response)
    }

    private static func run(_ session: URLSession, _ request: URLRequest, limit: AnswerLimit,
                            into download: AssetDownload?) async throws -> AnswerCollector.Collected {
        guard let collector = session.delegate as? AnswerCollector else {
            throw NimbusError(.invalidArguments, reason: "The session was not made by AnswerCollector.makeSession, so its answers would have no limit.")
        }
        let holder = CancellableRequest()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<AnswerCollector.Collected, any Error>) in
                let task = session.dataTask(with: request)
                collector.expect(task, limit: limit, into: download) { result in
                    holder.finish()
                    continuation.resume(with: result)
                }
                holder.start(task)
            }
        } onCancel: {
            holder.cancel()
        }
    }

    private func start(_ task: URLSessionTask) {
        lock.lock()
        self.task = task
        let cancelled = isCancelled
        lock.unlock()
        task.resume()
        if cancelled { cancelElsewhere() }
    }

    private func finish() {
        lock.lock()
        isFinished = true
        lock.unlock()
    }

    private func cancel() {
        lock.lock()
        isCancelled = true
        let started = task != nil
        lock.unlock()
        if started { cancelElsewhere() }
    }

    private func cancelElsewhere() {
        DispatchQueue.global().async { [self] in
            lock.lock()
            let task = isFinished ? nil : task
            lock.unlock()
            task?.cancel()
        }
    }
}
