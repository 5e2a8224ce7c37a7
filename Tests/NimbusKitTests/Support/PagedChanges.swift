import Foundation
import Testing
@testable import NimbusKit

/// An in-process `records/changes` of one zone, `pages` pages of `perPage` records (`r-PP-RR`),
/// page N answering the token `tN-1` (the first no token) with the token `tN`. It keeps every
/// request it was asked (by token), how many are running, and which ended cancelled. A page can
/// be held (its request waits until released or cancelled) or answered with an error. As an
/// `HTTPTransport` it also answers `GET /limits`, so an engine can fetch from it.
final class PagedChanges: HTTPTransport, Sendable {
    struct Snapshot {
        var asked: [String] = []
        var running = 0
        var cancelled: [String] = []
        var finished: [String] = []
    }

    let pages: Int
    let perPage: Int
    private let state = Locked(Snapshot())
    private let held = Locked<Set<String>>([])
    private let failing = Locked<[String: NimbusError]>([:])

    init(pages: Int, perPage: Int = 2) {
        self.pages = pages
        self.perPage = perPage
    }

    var snapshot: Snapshot { state.withLock { $0 } }

    /// The token that asks for page `index` (0-based): none for the first.
    static func token(before index: Int) -> String { index == 0 ? "" : "t\(index)" }

    /// Page `index`'s request waits until `release(index)` or until it is cancelled.
    func hold(_ index: Int) { _ = held.withLock { $0.insert(Self.token(before: index)) } }
    func release(_ index: Int) { _ = held.withLock { $0.remove(Self.token(before: index)) } }
    /// Page `index` is answered with `error`.
    func fail(_ index: Int, with error: NimbusError) { failing.withLock { $0[Self.token(before: index)] = error } }

    /// The record names of page `index`.
    func names(_ index: Int) -> [String] { (0..<perPage).map { String(format: "r-%02d-%02d", index, $0) } }

    /// The wire bytes of the page asked for with `token` (an unknown token: an empty last page).
    func body(_ token: String) -> Data {
        let index = token.isEmpty ? 0 : Int(token.dropFirst()) ?? pages
        let records = index < pages ? names(index).map {
            #"{"recordName":"\#($0)","recordType":"Item","fields":{"n":{"value":"\#($0)","type":"STRING"}}}"#
        } : []
        let more = index + 1 < pages
        return Data(#"{"records":[\#(records.joined(separator: ","))],"syncToken":"t\#(index + 1)","moreComing":\#(more)}"#.utf8)
    }

    /// One page's request, as the engine's fetch makes it (`token` nil: the first page).
    func fetch(_ token: SyncToken?) async throws -> Data {
        let key = token?.value ?? ""
        state.withLock { $0.asked.append(key); $0.running += 1 }
        defer { state.withLock { $0.running -= 1 } }
        do {
            while held.withLock({ $0.contains(key) }) {
                try await Task.sleep(nanoseconds: 2_000_000)
            }
            try Task.checkCancellation()
        } catch {
            state.withLock { $0.cancelled.append(key) }
            throw error
        }
        state.withLock { $0.finished.append(key) }
        if let error = failing.withLock({ $0[key] }) { throw error }
        return body(key)
    }

    func send(_ request: HTTPRequest) async throws -> HTTPAnswer {
        if request.url.path.hasSuffix("/limits") {
            return HTTPAnswer(status: 200, headers: ["Content-Type": "application/json"], body: Data(#"{"maxResultsLimit":400}"#.utf8))
        }
        guard request.url.path.hasSuffix("/records/changes"), let body = request.body,
              let object = try JSONSerialization.jsonObject(with: body) as? [String: Any] else {
            Issue.record("an unexpected request: \(request.method) \(request.url)")
            return HTTPAnswer(status: 599)
        }
        do {
            let data = try await fetch((object["syncToken"] as? String).map(SyncToken.init))
            return HTTPAnswer(status: 200, headers: ["Content-Type": "application/json"], body: data)
        } catch let error as NimbusError {
            let wire = #"{"serverErrorCode":"\#(error.serverErrorCode ?? "CHANGE_TOKEN_EXPIRED")","reason":"\#(error.reason)"}"#
            return HTTPAnswer(status: 410, headers: ["Content-Type": "application/json"], body: Data(wire.utf8))
        }
    }

    /// A database whose requests all come here.
    func database() -> Database {
        let configuration = NimbusConfiguration(serverURL: URL(string: "http://paged.test/")!, token: "device")
        let container = Container(identifier: "iCloud.test.paged", configuration: configuration,
                                  transport: Transport(configuration: configuration, base: self))
        return container.privateDatabase
    }
}
