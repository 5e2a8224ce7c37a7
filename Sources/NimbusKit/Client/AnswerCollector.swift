import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session delegate that collects each data task's answer up to its `AnswerLimit`, in memory
/// or (an asset's bytes) in a file of its own. A declared `Content-Length` past the limit stops
/// the task before the body, and a body that grows past it is cancelled there (a completion
/// handler or a download task would take an endless body whole). Tasks it was not told about
/// (uploads) are left to their own handlers.
///
/// swift-corelibs-foundation hands body chunks to the delegate queue without back-pressure (and
/// keeps the task's byte counts and `progress` at 0 meanwhile): a body arriving faster than the
/// queue runs (hundreds of MB/s over loopback, or a starved queue) is cut when the queue reaches
/// the limit, with the chunks queued by then dropped unwritten. At network speeds the queue keeps
/// up and the cut is at the limit. (Its download tasks are not used: a cancelled one leaves its
/// partial temporary file behind.)
final class AnswerCollector: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `answers` and every `Answer`'s fields are only touched under `lock`.

    /// A complete answer within its limit: the body in `data`, or in `file` when one was given.
    struct Collected: Sendable {
        var data = Data()
        var file: URL?
        var response: URLResponse
    }

    private final class Answer {
        let limit: AnswerLimit
        let url: URL?
        let done: @Sendable (Result<Collected, any Error>) -> Void
        var data = Data()
        let file: URL?
        var sink: FileHandle?
        var received = 0
        var response: URLResponse?
        /// Bytes announced or received when the limit was passed, or the file could not be written.
        var exceeded: Int?
        var writeError: (any Error)?

        init(limit: AnswerLimit, request: URLRequest?, file: URL?, done: @escaping @Sendable (Result<Collected, any Error>) -> Void) {
            self.limit = limit
            url = request?.url
            self.file = file
            self.done = done
        }

        /// Closes and, unless it is the answer, deletes the file.
        func closeFile(keeping: Bool) {
            try? sink?.close()
            sink = nil
            if !keeping, let file { try? FileManager.default.removeItem(at: file) }
        }
    }

    private let lock = NSLock()
    private var answers: [Int: Answer] = [:]

    /// A session whose tasks this collector (held by the session until it is invalidated) bounds.
    static func makeSession(_ configuration: URLSessionConfiguration) -> URLSession {
        URLSession(configuration: configuration, delegate: AnswerCollector(), delegateQueue: nil)
    }

    /// Collects `task`'s answer, into a new `file` when one is given; `done` gets it (or the
    /// failure) once, when the task completes.
    func expect(_ task: URLSessionDataTask, limit: AnswerLimit, into file: URL? = nil,
                done: @escaping @Sendable (Result<Collected, any Error>) -> Void) {
        let answer = Answer(limit: limit, request: task.originalRequest, file: file, done: done)
        if let file {
            if FileManager.default.createFile(atPath: file.path, contents: nil), let handle = try? FileHandle(forWritingTo: file) {
                answer.sink = handle
            } else {
                answer.writeError = NimbusError(.networkFailure, reason: "Cannot write the download to \(file.path).")
            }
        }
        lock.withLock { answers[task.taskIdentifier] = answer }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let declared = response.expectedContentLength   // -1: not declared
        let refuse = lock.withLock { () -> Bool in
            guard let answer = answers[dataTask.taskIdentifier] else { return false }
            answer.response = response
            guard answer.writeError == nil, declared <= Int64(answer.limit.bytes) else {
                answer.exceeded = answer.writeError == nil ? Int(clamping: declared) : nil
                return true
            }
            return false
        }
        // swift-corelibs-foundation ignores the disposition here: the task is cancelled instead.
        completionHandler(refuse ? .cancel : .allow)
        if refuse { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let cut = lock.withLock { () -> Bool in
            guard let answer = answers[dataTask.taskIdentifier], answer.exceeded == nil, answer.writeError == nil else { return false }
            answer.received += data.count
            guard answer.received <= answer.limit.bytes else {
                answer.exceeded = answer.received
                answer.data = Data()
                return true
            }
            if let sink = answer.sink {
                do { try sink.write(contentsOf: data) } catch {
                    answer.writeError = error
                    return true
                }
            } else {
                answer.data.append(data)
            }
            return false
        }
        if cut { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let answer = lock.withLock({ answers.removeValue(forKey: task.taskIdentifier) }) else { return }
        let response = answer.response ?? task.response
        let result: Result<Collected, any Error>
        if let exceeded = answer.exceeded {
            result = .failure(answer.limit.exceeded(by: exceeded, from: answer.url))
        } else if let writeError = answer.writeError {
            result = .failure(writeError)
        } else if let error {
            result = .failure(error)
        } else if let response {
            result = .success(Collected(data: answer.data, file: answer.file, response: response))
        } else {
            result = .failure(URLError(.badServerResponse))
        }
        answer.closeFile(keeping: (try? result.get()) != nil)
        answer.done(result)
    }
}
