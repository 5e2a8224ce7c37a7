import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// HTTP to one server with one device credential: JSON in, JSON out, every failure as a
/// `NimbusError`. Requests go through the interceptors (retry, then credential) to a transport:
/// `URLSessionTransport`, or the in-process one a test gives.
final class Transport: Sendable {
    let configuration: NimbusConfiguration
    /// The default transport's session, for the asset paths that stream a file (uploads from one,
    /// downloads into one), which only URLSession does.
    let session: URLSession
    let credential: CredentialInterceptor
    /// The interceptors and the transport every request of `exchange` goes through.
    private let chain: any HTTPTransport

    /// `base`: where requests go (nil: URLSession); `retry`: how 503s are sent again.
    init(configuration: NimbusConfiguration, base: (any HTTPTransport)? = nil, retry: RetryInterceptor = RetryInterceptor()) {
        self.configuration = configuration
        credential = CredentialInterceptor(token: configuration.token)
        session = URLSessionTransport.makeSession()
        chain = InterceptedTransport(base: base ?? URLSessionTransport(session: session), interceptors: [retry, credential])
    }

    deinit { session.finishTasksAndInvalidate() }

    var currentToken: String { credential.current }

    /// Requests started from now on carry `newToken` (requests under way keep the old one).
    func replaceToken(_ newToken: String) { credential.replace(newToken) }

    /// `serverURL` + path (the path starts with `/`).
    func url(_ path: String) -> URL {
        var base = configuration.serverURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: base + path) ?? configuration.serverURL
    }

    /// A request built as a `URLRequest` (for URLSession's file paths), the credential set now.
    func request(_ url: URL, method: String, waitSeconds: Int = 0, authorized: Bool = true) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = timeout(waitSeconds: waitSeconds)
        if authorized { request.setValue("Bearer \(currentToken)", forHTTPHeaderField: "Authorization") }
        return request
    }

    func timeout(waitSeconds: Int) -> TimeInterval { configuration.requestTimeout + TimeInterval(waitSeconds) }

    /// POSTs a JSON body and returns the answer's JSON object; a non-2xx answer throws its error.
    /// `limit`: what the request can return (`AnswerLimit.records` for answers with records).
    func post(_ url: URL, body: JSONObject, waitSeconds: Int = 0, zoneID: ZoneID = .default, authorized: Bool = true,
              limit: AnswerLimit = .small) async throws -> JSONObject {
        try await post(url, bodyData: JSON.encode(body), waitSeconds: waitSeconds, zoneID: zoneID, authorized: authorized, limit: limit)
    }

    func post(_ url: URL, bodyData: Data, waitSeconds: Int = 0, zoneID: ZoneID = .default, authorized: Bool = true,
              limit: AnswerLimit = .small) async throws -> JSONObject {
        let answer = try await exchange(HTTPRequest(url: url, method: "POST", headers: ["Content-Type": "application/json"], body: bodyData,
                                                    timeout: timeout(waitSeconds: waitSeconds), limit: limit, authorized: authorized))
        try Transport.check(answer, zoneID: zoneID)
        return try JSON.decodeObject(answer.body)
    }

    func get(_ url: URL, waitSeconds: Int = 0, authorized: Bool = true, limit: AnswerLimit = .small) async throws -> JSONObject {
        let answer = try await exchange(HTTPRequest(url: url, method: "GET", timeout: timeout(waitSeconds: waitSeconds), limit: limit,
                                                    authorized: authorized))
        try Transport.check(answer, zoneID: .default)
        return try JSON.decodeObject(answer.body)
    }

    /// Sends a request through the interceptors; any status is an answer (`check` throws the errors).
    func exchange(_ request: HTTPRequest) async throws -> HTTPAnswer {
        do {
            return try await chain.send(request)
        } catch {
            throw Transport.networkError(error, url: request.url, timeout: request.timeout)
        }
    }

    /// Sends a request built as a `URLRequest` through the interceptors, as `exchange` does.
    func send(_ request: URLRequest, limit: AnswerLimit) async throws -> (Data, HTTPURLResponse) {
        let answer = try await exchange(HTTPRequest(request, limit: limit))
        guard let url = request.url, let response = HTTPURLResponse(url: url, statusCode: answer.status, httpVersion: "HTTP/1.1",
                                                                     headerFields: answer.headers) else {
            throw NimbusError(.serverResponseBad, reason: "The answer from \(request.url?.absoluteString ?? "?") is not HTTP.")
        }
        return (answer.body, response)
    }

    /// Starts a download of at most `limit` bytes, its 2xx body taken by `download` as it arrives
    /// (not cancellable: for blocking callers); `done` gets the answer (an error's body) once.
    func startDownload(_ request: URLRequest, limit: AnswerLimit, into download: AssetDownload,
                       done: @escaping @Sendable (Result<(Data, URLResponse), any Error>) -> Void) {
        guard let collector = session.delegate as? AnswerCollector else {
            download.discard()
            done(.failure(NimbusError(.invalidArguments, reason: "The session has no AnswerCollector.")))
            return
        }
        let task = session.dataTask(with: request)
        collector.expect(task, limit: limit, into: download) { result in
            done(result.map { ($0.data, $0.response) })
        }
        task.resume()
    }

    /// A request that got no answer, saying what happened in words (what timed out and after
    /// how long, which host refused the connection), never only "NSURLErrorDomain error -1001".
    static func networkError(_ error: any Error, url: URL?, timeout: TimeInterval? = nil) -> NimbusError {
        if let nimbus = error as? NimbusError { return nimbus }
        return NetworkFailureText.error(error, url: url, timeout: timeout)
    }

    /// Throws the answer's error when its status is not 2xx.
    static func check(_ response: HTTPURLResponse, data: Data, zoneID: ZoneID) throws {
        try check(HTTPAnswer(response, body: data), zoneID: zoneID)
    }

    /// Throws the answer's error when its status is not 2xx: the server's error shape as it says,
    /// anything else (a proxy's page, a crash, garbage) by its status.
    static func check(_ answer: HTTPAnswer, zoneID: ZoneID) throws {
        let status = answer.status
        guard !(200..<300).contains(status) else { return }
        let data = answer.body
        let retryAfter = answer.header("Retry-After").flatMap(TimeInterval.init)
        if let object = try? JSON.decodeObject(data), object["serverErrorCode"] != nil {
            var error = NimbusError.fromWire(object, status: status, zoneID: zoneID)
            if error.retryAfter == nil { error.retryAfter = retryAfter }
            throw error
        }
        let code: NimbusError.Code
        switch status {
        case 502, 503, 504: code = .serviceUnavailable
        case 429: code = .requestRateLimited
        case 408: code = .networkFailure
        case 401: code = .notAuthenticated
        case 500...: code = .internalError
        default: code = .serverResponseBad
        }
        throw NimbusError(code, reason: "HTTP \(status) with a body that is not a Nimbus error: \(JSON.preview(data))",
                          retryAfter: retryAfter, httpStatus: status)
    }
}

extension HTTPURLResponse {
    /// A header field by case-insensitive name.
    func header(_ name: String) -> String? {
        for (key, value) in allHeaderFields {
            if let key = key as? String, key.caseInsensitiveCompare(name) == .orderedSame { return value as? String }
        }
        return nil
    }
}
