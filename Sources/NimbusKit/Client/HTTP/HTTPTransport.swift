import Foundation

/// One HTTP request as the client's request paths describe it, before any interceptor has run.
struct HTTPRequest: Sendable {
    var url: URL
    var method: String
    /// Header fields by name as written (`Content-Type`); the credential interceptor adds `Authorization`.
    var headers: [String: String] = [:]
    var body: Data?
    /// Seconds before the request is given up (the configuration's timeout plus any long-poll wait).
    var timeout: TimeInterval
    /// What the answer may hold at most (`AnswerLimit`).
    var limit: AnswerLimit = .small
    /// Whether the device's credential goes with it (`/limits` and pairing go without).
    var authorized = true
}

/// An HTTP answer of any status: the caller decides what a status means (`Transport.check`).
struct HTTPAnswer: Sendable {
    var status: Int
    /// Header fields with lower-cased names.
    var headers: [String: String]
    var body: Data

    init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
    }

    /// A header field by case-insensitive name.
    func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// Sends a request and gets its answer. `URLSessionTransport` is the one apps use; tests put an
/// in-process one in its place (no server). A failure to get any answer throws a `NimbusError`
/// (`networkFailure`, or `serverResponseBad` past the answer's limit); any status is an answer.
protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequest) async throws -> HTTPAnswer
}

/// A step every request passes on its way to the transport: it may change the request, send it
/// again, or answer without sending (`next` is the rest of the chain).
protocol HTTPInterceptor: Sendable {
    func intercept(_ request: HTTPRequest, next: @Sendable (HTTPRequest) async throws -> HTTPAnswer) async throws -> HTTPAnswer
}

/// A transport behind interceptors, the first one outermost.
struct InterceptedTransport: HTTPTransport {
    let base: any HTTPTransport
    let interceptors: [any HTTPInterceptor]

    func send(_ request: HTTPRequest) async throws -> HTTPAnswer {
        try await send(request, from: 0)
    }

    private func send(_ request: HTTPRequest, from index: Int) async throws -> HTTPAnswer {
        guard index < interceptors.count else { return try await base.send(request) }
        return try await interceptors[index].intercept(request) { try await send($0, from: index + 1) }
    }
}
