import Foundation
import NimbusAdmin
import NimbusAPI
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport
import NimbusTestSupport

/// The admin console in-process over a throwaway database, with an admin token: requests go
/// straight into its handler and the answer is captured, with no socket in between.
struct AdminFixture: Sendable {
    let database: StoreFixture
    let handler: HTTPServer.Handler
    let adminToken: String

    /// `push`: the console's store has these push settings (off by default, as the database
    /// fixture's store).
    static func with<T: Sendable>(push: PushSettings = PushSettings(), _ body: (AdminFixture) async throws -> T) async throws -> T {
        try await StoreFixture.with { database in
            let facts = AdminConsole.ServerFacts(
                version: "test", startedAt: Date(), options: [("listen", "127.0.0.1:0")], publicURL: "http://nimbus.test",
                pruneSchedule: PruneSchedule(options: PruneOptions()))
            let store = push.isOn ? try await Store.open(pool: database.pool, push: push) : database.store
            let console = AdminConsole(store: store, limits: Limits(), metrics: Metrics(), facts: facts)
            let token = try await store.admin.issueToken(name: "ops")
            return try await body(AdminFixture(database: database, handler: console.handler, adminToken: token.secret, store: store))
        }
    }

    /// The console's store.
    let store: Store

    /// Sends a request (with the admin token unless `token` says otherwise) and waits for its answer.
    func send(_ method: String, _ path: String, token: String?? = .none, body: String? = nil) async -> AdminAnswer {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "127.0.0.1:8081")
        if let token = token ?? adminToken { headers.add(name: "Authorization", value: "Bearer \(token)") }
        let request = HTTPRequest(head: HTTPRequestHead(method: method, target: path, headers: headers), body: Array((body ?? "").utf8))
        let sink = AnswerSink()
        handler(request, HTTPResponseWriter(sink: sink))
        return await sink.answer()
    }
}

/// A captured answer: status, headers and the body as JSON.
struct AdminAnswer: Sendable, CustomStringConvertible {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]

    var json: JSONValue { (try? JSONValue.parse(body)) ?? .null }
    var serverErrorCode: String? { json["serverErrorCode"]?.stringValue }
    var description: String { "\(status) \(String(decoding: body, as: UTF8.self))" }

    func items(_ member: String) -> [JSONValue] {
        if case .array(let items)? = json[member] { return items }
        return []
    }
}

/// Takes the one complete answer the console gives (it never streams).
final class AnswerSink: HTTPResponseSink, Sendable {
    private let state = Lock<(answer: AdminAnswer?, waiter: CheckedContinuation<AdminAnswer, Never>?)>((nil, nil))

    func respond(_ response: HTTPResponse) {
        let answer = AdminAnswer(status: response.status.code, headers: response.headers, body: response.body)
        let waiter = state.withLock { state -> CheckedContinuation<AdminAnswer, Never>? in
            state.answer = answer
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: answer)
    }

    func startStreaming(status: HTTPStatus, headers: HTTPHeaders, contentLength: Int?) {
        respond(HTTPResponse(status: .internalServerError, contentType: "text/plain", body: Array("the console streamed".utf8)))
    }

    func write(_ bytes: [UInt8]) -> Bool { false }
    func writeChunk(_ bytes: [UInt8]) {}
    func finishStreaming(last: [UInt8]) {}
    func probeWhenInputCloses(_ bytes: [UInt8]) {}
    func onCancel(_ handler: @escaping @Sendable () -> Void) {}

    func answer() async -> AdminAnswer {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> AdminAnswer? in
                if state.answer == nil { state.waiter = continuation }
                return state.answer
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
