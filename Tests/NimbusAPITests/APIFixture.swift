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
