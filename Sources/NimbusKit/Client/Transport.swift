import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// HTTP to one server with one device token: JSON in, JSON out, every failure as a `NimbusError`.
final class Transport: Sendable {
    let configuration: NimbusConfiguration
    let session: URLSession
    /// The device token requests carry: the configuration's, until `replaceToken`.
    private let token: Locked<String>

    init(configuration: NimbusConfiguration) {
        self.configuration = configuration
        token = Locked(configuration.token)
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.httpMaximumConnectionsPerHost = 8
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        sessionConfiguration.urlCache = nil
        session = AnswerCollector.makeSession(sessionConfiguration)
    }

    deinit { session.finishTasksAndInvalidate() }

    var currentToken: String { token.withLock { $0 } }

    /// Requests started from now on carry `newToken` (requests under way keep the old one).
    func replaceToken(_ newToken: String) { token.withLock { $0 = newToken } }

    /// `serverURL` + path (the path starts with `/`).
    func url(_ path: String) -> URL {
        var base = configuration.serverURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        return URL(string: base + path) ?? configuration.serverURL
    }

    func request(_ url: URL, method: String, waitSeconds: Int = 0, authorized: Bool = true) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = configuration.requestTimeout + TimeInterval(waitSeconds)
        if authorized { request.setValue("Bearer \(currentToken)", forHTTPHeaderField: "Authorization") }
        return request
    }

    /// POSTs a JSON body and returns the answer's JSON object; a non-2xx answer throws its error.
    /// `limit`: what the request can return (`AnswerLimit.records` for answers with records).
    func post(_ url: URL, body: JSONObject, waitSeconds: Int = 0, zoneID: ZoneID = .default, authorized: Bool = true,
              limit: AnswerLimit = .small) async throws -> JSONObject {
        try await post(url, bodyData: JSON.encode(body), waitSeconds: waitSeconds, zoneID: zoneID, authorized: authorized, limit: limit)
    }

    func post(_ url: URL, bodyData: Data, waitSeconds: Int = 0, zoneID: ZoneID = .default, authorized: Bool = true,
              limit: AnswerLimit = .small) async throws -> JSONObject {
        var request = request(url, method: "POST", waitSeconds: waitSeconds, authorized: authorized)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = bodyData
        return try await json(for: request, zoneID: zoneID, limit: limit)
    }

    func get(_ url: URL, waitSeconds: Int = 0, authorized: Bool = true, limit: AnswerLimit = .small) async throws -> JSONObject {
        try await json(for: request(url, method: "GET", waitSeconds: waitSeconds, authorized: authorized), zoneID: .default, limit: limit)
    }

    func json(for request: URLRequest, zoneID: ZoneID, limit: AnswerLimit) async throws -> JSONObject {
        let (data, response) = try await send(request, limit: limit)
        try Transport.check(response, data: data, zoneID: zoneID)
        return try JSON.decodeObject(data)
    }

    /// Sends a request; a failure to get any answer is `networkFailure`, an answer past `limit`
    /// `serverResponseBad`.
    func send(_ request: URLRequest, limit: AnswerLimit) async throws -> (Data, HTTPURLResponse) {
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await CancellableRequest.data(session, for: request, limit: limit)
        } catch {
            throw Transport.networkError(error, url: request.url, timeout: request.timeoutInterval)
        }
        guard let http = response as? HTTPURLResponse else {
            throw NimbusError(.serverResponseBad, reason: "The answer from \(request.url?.absoluteString ?? "?") is not HTTP.")
        }
        return (data, http)
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
        let status = response.statusCode
        guard !(200..<300).contains(status) else { return }
        let retryAfter = response.header("Retry-After").flatMap(TimeInterval.init)
        if let object = try? JSON.decodeObject(data), object["serverErrorCode"] != nil {
            var error = NimbusError.fromWire(object, status: status, zoneID: zoneID)
            if error.retryAfter == nil { error.retryAfter = retryAfter }
            throw error
        }
        // Not our error shape: a proxy's page, a crash, garbage.
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
