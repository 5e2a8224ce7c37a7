import Foundation
import NimbusAPI
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport
import NimbusTestSupport

/// The API in-process over a throwaway database: requests go straight into its handler and the
/// answer is captured, with no socket in between.
struct APIFixture: Sendable {
    let database: StoreFixture
    let api: API
    let container = "iCloud.test.App"

    /// Runs `body` with a fresh database and an API over it.
    static func with<T: Sendable>(limits: Limits = Limits(), _ body: (APIFixture) async throws -> T) async throws -> T {
        try await StoreFixture.with { database in
            try await body(APIFixture(database: database, api: API(store: database.store, limits: limits)))
        }
    }

    /// A bearer token of a new device of `user` (the user is created if needed).
    func token(user: String = "alice", device: String = "mac") async throws -> String {
        if try await !database.store.accounts.listUsers().contains(where: { $0.name == user }) {
            _ = try await database.store.accounts.addUser(name: user)
        }
        return try await database.store.accounts.issueToken(user: user, device: device).secret
    }

    /// Sends a request and waits for its complete answer.
    func send(_ method: String, _ path: String, token: String? = nil, body: String? = nil, headers: HTTPHeaders = [:]) async -> Answer {
        var headers = headers
        headers.add(name: "Host", value: "nimbus.test")
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        let request = HTTPRequest(head: HTTPRequestHead(method: method, target: path, headers: headers), body: Array((body ?? "").utf8))
        let sink = CapturingSink()
        api.handler(request, HTTPResponseWriter(sink: sink))
        return await sink.answer()
    }

    /// `POST /database/1/<container>/development/private/<operation>` with a JSON body.
    func database(_ operation: String, token: String, _ body: String = "{}") async -> Answer {
        await send("POST", "/database/1/\(container)/development/private/\(operation)", token: token, body: body)
    }
}

/// A captured answer: status, headers and the body (its JSON when it is JSON).
struct Answer: Sendable, CustomStringConvertible {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]

    var json: JSONValue { (try? JSONValue.parse(body)) ?? .null }
    var serverErrorCode: String? { json["serverErrorCode"]?.stringValue }
    var reason: String { json["reason"]?.stringValue ?? "" }
    var description: String { "\(status) \(String(decoding: body, as: UTF8.self))" }

    /// The elements of an array member (`records`, `zones`, …).
    func items(_ member: String) -> [JSONValue] {
        if case .array(let items)? = json[member] { return items }
        return []
    }
}

/// Collects what the API writes and hands it over once the answer is complete.
final class CapturingSink: HTTPResponseSink, @unchecked Sendable {
    // @unchecked: every member is read and written under `lock`.
    private let lock = NSLock()
    private var answerSoFar = Answer(status: 0, headers: [:], body: [])
    private var finished = false
    private var waiter: CheckedContinuation<Answer, Never>?

    func respond(_ response: HTTPResponse) {
        finish(Answer(status: response.status.code, headers: response.headers, body: response.body))
    }

    func startStreaming(status: HTTPStatus, headers: HTTPHeaders, contentLength: Int?) {
        lock.withLock {
            answerSoFar.status = status.code
            answerSoFar.headers = headers
        }
    }

    func write(_ bytes: [UInt8]) -> Bool {
        lock.withLock { answerSoFar.body += bytes }
        return true
    }

    func finishStreaming() {
        finish(lock.withLock { answerSoFar })
    }

    func answer() async -> Answer {
        await withCheckedContinuation { continuation in
            let ready: Answer? = lock.withLock {
                if finished { return answerSoFar }
                waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private func finish(_ answer: Answer) {
        let waiting: CheckedContinuation<Answer, Never>? = lock.withLock {
            guard !finished else { return nil }
            finished = true
            answerSoFar = answer
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume(returning: answer)
    }
}
