import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport apps use: one URLSession whose answers are bounded by their `AnswerLimit`
/// (`AnswerCollector`) and whose requests stop when the calling task is cancelled (`CancellableRequest`).
struct URLSessionTransport: HTTPTransport {
    let session: URLSession

    /// A session for one server: ephemeral, uncached, no cookies, at most 8 connections.
    static func makeSession() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 8
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        // Nimbus sets no cookies; with none accepted swift-corelibs-foundation skips parsing every
        // header line of every answer for them (2% of a first sync's client CPU).
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        configuration.httpCookieStorage = nil
        return AnswerCollector.makeSession(configuration)
    }

    func send(_ request: HTTPRequest) async throws -> HTTPAnswer {
        let urlRequest = URLSessionTransport.urlRequest(request)
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await CancellableRequest.data(session, for: urlRequest, limit: request.limit)
        } catch {
            throw Transport.networkError(error, url: request.url, timeout: request.timeout)
        }
        guard let http = response as? HTTPURLResponse else {
            throw NimbusError(.serverResponseBad, reason: "The answer from \(request.url.absoluteString) is not HTTP.")
        }
        return HTTPAnswer(http, body: data)
    }

    static func urlRequest(_ request: HTTPRequest) -> URLRequest {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.timeoutInterval = request.timeout
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = request.body
        return urlRequest
    }
}

extension HTTPAnswer {
    init(_ response: HTTPURLResponse, body: Data) {
        var headers: [String: String] = [:]
        for (key, value) in response.allHeaderFields {
            if let key = key as? String, let value = value as? String { headers[key] = value }
        }
        self.init(status: response.statusCode, headers: headers, body: body)
    }
}

extension HTTPRequest {
    /// A request already built as a `URLRequest` (its own headers, `Authorization` included).
    init(_ request: URLRequest, limit: AnswerLimit) {
        url = request.url ?? URL(fileURLWithPath: "/")
        method = request.httpMethod ?? "GET"
        headers = request.allHTTPHeaderFields ?? [:]
        body = request.httpBody
        timeout = request.timeoutInterval
        self.limit = limit
        authorized = false
    }
}
