#if canImport(CCurl)
import Foundation
import Testing
@testable import NimbusKit
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `CurlTransport` (the engine's pages of records on Linux) against the real server, beside
/// `URLSessionTransport`: the same answers, the same limit, the same words for a failure, and a
/// cancelled request that stops.
@Suite("CurlTransport against the real server")
struct CurlTransportTests {
    func changesRequest(_ server: TestServer, token: String, body: String = #"{"zoneID":{"zoneName":"_defaultZone"}}"#,
                        limit: AnswerLimit = .small) -> HTTPRequest {
        HTTPRequest(url: server.url.appendingPathComponent("database/1/\(TestServer.container)/development/private/records/changes"),
                    method: "POST", headers: ["Content-Type": "application/json", "Authorization": "Bearer \(token)"],
                    body: Data(body.utf8), timeout: 30, limit: limit, authorized: false)
    }

    @Test func aPageAndAnErrorAreTheAnswersURLSessionGets() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "curl", device: "mac")
        let writer = try Device.make(server, token: token)
        for n in 0..<30 { try await writer.save(event("e\(n)", name: "item-\(n)")) }
        #expect(try await writer.flush())
        let curl = CurlTransport(), session = URLSessionTransport(session: URLSessionTransport.makeSession())
        for request in [changesRequest(server, token: token), changesRequest(server, token: "not-a-token"),
                        changesRequest(server, token: token, body: #"{"zoneID":{"zoneName":"nope"}}"#)] {
            // Twice: the second goes over the connection the first left open.
            for _ in 0..<2 {
                let (a, b) = (try await curl.send(request), try await session.send(request))
                // An error's body differs only in its `uuid` (one per answer).
                var (x, y) = (try JSON.decodeObject(a.body), try JSON.decodeObject(b.body))
                #expect(a.status == 200 ? a.body == b.body : x["uuid"] != nil && y["uuid"] != nil)
                (x["uuid"], y["uuid"]) = (nil, nil)
                #expect(a.status == b.status && x == y, "\(a.status) \(b.status): \(JSON.preview(a.body)) vs \(JSON.preview(b.body))")
                #expect(a.header("content-type") == b.header("content-type"))
            }
        }
        let page = try await curl.send(changesRequest(server, token: token))
        let decoded = try ChangesPageDecoder.decode(page.body, zone: .default)
        #expect(page.status == 200 && decoded.modified.count == 30)
    }

    @Test func anAnswerPastItsLimitIsCutOffWithTheLimitsError() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "curl2", device: "mac")
        let writer = try Device.make(server, token: token)
        for n in 0..<10 { try await writer.save(event(String(repeating: "x", count: 200), name: "big-\(n)")) }
        #expect(try await writer.flush())
        let limit = AnswerLimit(bytes: 1000, what: "a test page")
        let error = await #expect(throws: NimbusError.self) { try await CurlTransport().send(changesRequest(server, token: token, limit: limit)) }
        #expect(error?.code == .serverResponseBad && error?.reason.contains("passed 1000 bytes") == true, "\(String(describing: error))")
    }

    @Test func aRefusedConnectionIsWordedAsURLSessionWordsIt() async throws {
        let request = HTTPRequest(url: URL(string: "http://127.0.0.1:9/records/changes")!, method: "POST", body: Data("{}".utf8), timeout: 10)
        let session = URLSessionTransport(session: URLSessionTransport.makeSession())
        var curlError: (any Error)?, sessionError: (any Error)?
        do { _ = try await CurlTransport().send(request) } catch { curlError = error }
        do { _ = try await session.send(request) } catch { sessionError = error }
        let (a, b) = (curlError.map { Transport.networkError($0, url: request.url) }, sessionError.map { Transport.networkError($0, url: request.url) })
        #expect(a != nil && a?.code == b?.code && a?.reason == b?.reason, "\(String(describing: a)) vs \(String(describing: b))")
    }

    @Test func aCancelledRequestStopsWhileTheServerHoldsIt() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "curl3", device: "mac")
        let first = try await CurlTransport().send(changesRequest(server, token: token))
        let syncToken = try #require(JSON.string(try JSON.decodeObject(first.body)["syncToken"]))
        // A long poll the server holds for 30 s: cancelled after 0.3 s, it must end long before.
        let held = changesRequest(server, token: token, body: #"{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"\#(syncToken)","wait":30}"#)
        let started = Date()
        let task = Task { try await CurlTransport().send(held) }
        try await Task.sleep(nanoseconds: 300_000_000)
        task.cancel()
        let outcome = await task.result
        #expect(throws: URLError.self) { try outcome.get() }
        #expect(Date().timeIntervalSince(started) < 10, "stopped at libcurl's next progress call, not when the server answered")
    }
}
#endif
