import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session delegate that collects each data task's answer up to its `AnswerLimit`: a
/// declared `Content-Length` past the limit stops the task before the body, and a body that grows
/// past it is cancelled there (a completion handler would buffer an endless body whole). Tasks it
/// was not told about (uploads, downloads) are left to their own handlers.
///
/// swift-corelibs-foundation hands body chunks to the delegate queue without back-pressure (and
/// keeps the task's byte counts and `progress` at 0 meanwhile): a body arriving faster than the
/// queue runs (hundreds of MB/s over loopback) is cut when the queue reaches the limit, with the
/// chunks queued by then dropped unread. At network speeds the queue keeps up and the cut is at
/// the limit.
final class AnswerCollector: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `answers` and every `Answer`'s fields are only touched under `lock`.
    private final class Answer {
        let limit: AnswerLimit
        let url: URL?
        let done: @Sendable (Result<(Data, URLResponse), any Error>) -> Void
        var data = Data()
        var response: URLResponse?
        /// Bytes announced or received when the limit was passed.
        var exceeded: Int?

        init(limit: AnswerLimit, request: URLRequest?, done: @escaping @Sendable (Result<(Data, URLResponse), any Error>) -> Void) {
            self.limit = limit
            url = request?.url
            self.done = done
        }
    }

    private let lock = NSLock()
    private var answers: [Int: Answer] = [:]

    /// A session whose data tasks this collector (held by the session until it is invalidated) bounds.
    static func makeSession(_ configuration: URLSessionConfiguration) -> URLSession {
        URLSession(configuration: configuration, delegate: AnswerCollector(), delegateQueue: nil)
    }

    /// Collects `task`'s answer; `done` gets it (or the failure) once, when the task completes.
    func expect(_ task: URLSessionDataTask, limit: AnswerLimit,
                done: @escaping @Sendable (Result<(Data, URLResponse), any Error>) -> Void) {
        let answer = Answer(limit: limit, request: task.originalRequest, done: done)
        lock.withLock { answers[task.taskIdentifier] = answer }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let declared = response.expectedContentLength   // -1: not declared
        let refuse = lock.withLock { () -> Bool in
            guard let answer = answers[dataTask.taskIdentifier] else { return false }
            answer.response = response
            guard declared > Int64(answer.limit.bytes) else { return false }
            answer.exceeded = Int(clamping: declared)
            return true
        }
        // swift-corelibs-foundation ignores the disposition here: the task is cancelled instead.
        completionHandler(refuse ? .cancel : .allow)
        if refuse { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let cut = lock.withLock { () -> Bool in
            guard let answer = answers[dataTask.taskIdentifier], answer.exceeded == nil else { return false }
            let received = answer.data.count + data.count
            guard received <= answer.limit.bytes else {
                answer.exceeded = received
                answer.data = Data()
                return true
            }
            answer.data.append(data)
            return false
        }
        if cut { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let answer = lock.withLock({ answers.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let exceeded = answer.exceeded {
            answer.done(.failure(answer.limit.exceeded(by: exceeded, from: answer.url)))
        } else if let error {
            answer.done(.failure(error))
        } else if let response = answer.response ?? task.response {
            answer.done(.success((answer.data, response)))
        } else {
            answer.done(.failure(URLError(.badServerResponse)))
        }
    }
}
