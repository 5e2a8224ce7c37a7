import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The session delegate that collects each data task's answer up to its `AnswerLimit`, in memory
/// or (an asset's 2xx body) through an `AssetDownload`, chunk by chunk as it arrives. A declared
/// `Content-Length` past the limit stops the task before the body, and a body that grows past it
/// is cancelled there (a completion handler or a download task would take an endless body whole).
/// Tasks it was not told about (uploads) are left to their own handlers.
///
/// swift-corelibs-foundation hands body chunks to the delegate queue without back-pressure (and
/// keeps the task's byte counts and `progress` at 0 meanwhile): a body arriving faster than the
/// queue runs (hundreds of MB/s over loopback, or a starved queue) is cut when the queue reaches
/// the limit, with the chunks queued by then dropped unwritten. At network speeds the queue keeps
/// up and the cut is at the limit. (Its download tasks are not used: a cancelled one leaves its
/// partial temporary file behind.)
final class AnswerCollector: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `answers` and every `Answer`'s fields are only touched under `lock`.

    /// A complete answer within its limit: the body in `data`, unless an `AssetDownload` took it
    /// (a 2xx answer to a download; an error answer's body is always here).
    struct Collected: Sendable {
        var data = Data()
        var response: URLResponse
    }

    private final class Answer {
        let limit: AnswerLimit
        let url: URL?
        let done: @Sendable (Result<Collected, any Error>) -> Void
        var data = Data()
        /// Takes a 2xx body; set to nil (and discarded) when the answer is an error.
        var download: AssetDownload?
        var received = 0
        var response: URLResponse?
        /// Bytes announced or received when the limit was passed, or the file could not be written.
        var exceeded: Int?
        var writeError: (any Error)?

        init(limit: AnswerLimit, request: URLRequest?, download: AssetDownload?, done: @escaping @Sendable (Result<Collected, any Error>) -> Void) {
            self.limit = limit
            url = request?.url
            self.download = download
            self.done = done
        }
    }

    private let lock = NSLock()
    private var answers: [Int: Answer] = [:]

    /// A session whose tasks this collector (held by the session until it is invalidated) bounds.
    static func makeSession(_ configuration: URLSessionConfiguration) -> URLSession {
        URLSession(configuration: configuration, delegate: AnswerCollector(), delegateQueue: nil)
    }

    /// Collects `task`'s answer, a 2xx body into `download` when one is given (discarded when the
    /// answer is anything else); `done` gets it (or the failure) once, when the task completes.
    func expect(_ task: URLSessionDataTask, limit: AnswerLimit, into download: AssetDownload? = nil,
                done: @escaping @Sendable (Result<Collected, any Error>) -> Void) {
        let answer = Answer(limit: limit, request: task.originalRequest, download: download, done: done)
        lock.withLock { answers[task.taskIdentifier] = answer }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let declared = response.expectedContentLength   // -1: not declared
        let refuse = lock.withLock { () -> Bool in
            guard let answer = answers[dataTask.taskIdentifier] else { return false }
            answer.response = response
            if let http = response as? HTTPURLResponse, !(200..<300).contains(http.statusCode), let download = answer.download {
                download.discard()  // the server's error: its body is read from `data`
                answer.download = nil
            }
            guard answer.writeError == nil, declared <= Int64(answer.limit.bytes) else {
                answer.exceeded = answer.writeError == nil ? Int(clamping: declared) : nil
                return true
            }
            // A declared body kept in memory gets its room at once: growing it chunk by chunk (16 KiB
            // each from libcurl) copied a 200 KB page of records several times over.
            if declared > 0, answer.download == nil { answer.data.reserveCapacity(Int(declared)) }
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
            if let download = answer.download {
                do { try download.write(data) } catch {
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
            result = .success(Collected(data: answer.data, response: response))
        } else {
            result = .failure(URLError(.badServerResponse))
        }
        if (try? result.get()) == nil { answer.download?.discard() }
        answer.done(result)
    }

    /// A request body to send again from its first byte: libcurl rewinds it when it re-sends a
    /// request on a fresh connection (the reused one had died). A sealed upload's body is made
    /// afresh; any other stream body cannot be, and nil fails the task (the caller sends it again).
    /// swift-corelibs-foundation without a new stream would carry on from where the old one was.
    func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void) {
        #if canImport(FoundationNetworking)
        completionHandler((task.originalRequest?.httpBodyStream as? SealingInputStream)?.restarted())
        #else
        completionHandler(nil)
        #endif
    }
}
