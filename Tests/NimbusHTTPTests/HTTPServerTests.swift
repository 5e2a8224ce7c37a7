import Foundation
import Glibc
import Synchronization
import Testing
@testable import NimbusHTTP
import NimbusSupport

/// The server over real loopback sockets, with handlers that answer inline, later, streamed or
/// never (parked), as the API's routes do.
@Suite struct HTTPServerTests {
    /// Starts a server on a free port with `handler`; stops it after `body`.
    func withServer(
        _ configure: (inout HTTPServer.Configuration) -> Void = { _ in },
        handler: @escaping HTTPServer.Handler = HTTPServerTests.echo,
        _ body: (Int, HTTPServer) async throws -> Void
    ) async throws {
        var configuration = HTTPServer.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.eventLoopCount = 2
        configure(&configuration)
        let server = HTTPServer(configuration: configuration, handler: handler)
        let (_, port) = try server.start()
        do {
            try await body(port, server)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    /// Answers `<method> <path> <body length>`; `/slow` answers after 200 ms from another thread.
    static let echo: HTTPServer.Handler = { request, writer in
        let text = "\(request.method) \(request.path) \(request.body.count)"
        let response = HTTPResponse(status: .ok, contentType: "text/plain", body: Array(text.utf8))
        if request.path == "/slow" {
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { writer.respond(response) }
        } else {
            writer.respond(response)
        }
    }

    @Test func answersKeepAliveRequestsOnOneConnection() async throws {
        try await withServer { port, _ in
            let client = try TestClient(port: port)
            for index in 0..<50 {
                try client.send("GET /item/\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(response.bodyText == "GET /item/\(index) 0")
                #expect(response.header("Date") != nil)
                #expect(response.header("Connection") == nil)
            }
        }
    }

    @Test func answersPipelinedRequestsInOrderEvenWhenTheFirstIsSlow() async throws {
        try await withServer { port, _ in
            let client = try TestClient(port: port)
            try client.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /c HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().bodyText == "GET /slow 0")
            #expect(try client.readResponse().bodyText == "POST /b 3")
            #expect(try client.readResponse().bodyText == "GET /c 0")
        }
    }

    /// Large bodies go to the socket from where they lie; what it does not take at once (a reader
    /// that waits) is sent later, in order, and the next answers follow intact.
    @Test func largeAnswersArriveWholeThroughASlowReader() async throws {
        @Sendable func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) } }
        let handler: HTTPServer.Handler = { request, writer in
            let count = Int(request.path.dropFirst("/big/".count)) ?? 0
            writer.respond(HTTPResponse(status: .ok, contentType: "application/octet-stream", body: pattern(count)))
        }
        try await withServer(handler: handler) { port, _ in
            let client = try TestClient(port: port)
            let sizes = [6_000_000, 20_000, 16_385, 16_384, 10]
            try client.send(sizes.map { "GET /big/\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined() + "HEAD /big/50000 HTTP/1.1\r\nHost: x\r\n\r\n")
            usleep(300_000)      // the socket's buffers fill before anything is read
            for size in sizes {
                let response = try client.readResponse()
                #expect(response.status == 200 && response.header("Content-Length") == "\(size)")
                let intact = response.body == pattern(size)     // (not in the expectation: it would print megabytes)
                #expect(intact, "body of \(size) bytes")
            }
            let head = try client.readResponse(head: true)
            #expect(head.header("Content-Length") == "50000" && head.body.isEmpty)
        }
    }

    @Test func decodesChunkedRequestBodies() async throws {
        try await withServer { port, _ in
            let client = try TestClient(port: port)
            try client.send("POST /u HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
            #expect(try client.readResponse().bodyText == "POST /u 11")
        }
    }

    @Test func headResponsesCarryTheLengthButNoBody() async throws {
        try await withServer { port, _ in
            let client = try TestClient(port: port)
            try client.send("HEAD /h HTTP/1.1\r\nHost: x\r\n\r\nGET /h HTTP/1.1\r\nHost: x\r\n\r\n")
            let head = try client.readResponse(head: true)
            #expect(head.header("Content-Length") == "9")  // "HEAD /h 0"
            // The next response follows immediately: no body bytes were sent for HEAD.
            #expect(try client.readResponse().bodyText == "GET /h 0")
        }
    }

    @Test func http10ClosesUnlessKeepAliveIsAsked() async throws {
        try await withServer { port, _ in
            let client = try TestClient(port: port)
            try client.send("GET /a HTTP/1.0\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.header("Connection") == "close")
            #expect(client.isClosedByServer())

            let keepAlive = try TestClient(port: port)
            try keepAlive.send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            #expect(try keepAlive.readResponse().header("Connection") == "keep-alive")
            try keepAlive.send("GET /b HTTP/1.0\r\n\r\n")
            #expect(try keepAlive.readResponse().bodyText == "GET /b 0")
        }
    }

    @Test func connectionCloseIsHonoured() async throws {
        try await withServer { port, _ in
            let client = try TestClient(port: port)
            try client.send("GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(try client.readResponse().header("Connection") == "close")
            #expect(client.isClosedByServer())
        }
    }

    @Test func expectContinueGetsAnInterimResponseBeforeTheBody() async throws {
        try await withServer { port, _ in
            let client = try TestClient(port: port)
            try client.send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
            #expect(try client.readResponse().status == 100)
            try client.send("body")
            #expect(try client.readResponse().bodyText == "POST /e 4")
        }
    }

    @Test func refusesAnOversizedBodyWithoutAskingForIt() async throws {
        try await withServer({ $0.parserLimits.maxBodyBytes = 10 }) { port, _ in
            let client = try TestClient(port: port)
            try client.send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.bodyText.contains("LIMIT_EXCEEDED"))
            #expect(client.isClosedByServer())
        }
    }

    @Test func streamsChunkedResponses() async throws {
        let handler: HTTPServer.Handler = { _, writer in
            writer.startStreaming(status: .ok, headers: ["Content-Type": "text/plain"])
            DispatchQueue.global().async {
                for piece in ["one ", "two ", "three"] { writer.writeChunk(Array(piece.utf8)) }
                writer.finishStreaming()
            }
        }
        try await withServer(handler: handler) { port, _ in
            let client = try TestClient(port: port)
            try client.send("GET /s HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.header("Transfer-Encoding") == "chunked")
            #expect(response.bodyText == "one two three")
            // Still usable afterwards.
            try client.send("GET /s HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().bodyText == "one two three")
        }
    }

    /// A parked long-poll (headers sent, a probe registered) whose client goes away is cancelled at
    /// once: the FIN makes the server send the probe, and the closed client answers with a reset.
    @Test func cancelsAParkedLongPollWhenTheClientGoesAway() async throws {
        let cancelled = Atomic<Int>(0)
        let handler: HTTPServer.Handler = { _, writer in
            writer.startStreaming(status: .ok, headers: [:])
            writer.onCancel { cancelled.add(1, ordering: .relaxed) }  // never answers: parked
            writer.probeWhenInputCloses([0x20])
        }
        try await withServer(handler: handler) { port, server in
            do {
                let client = try TestClient(port: port)
                try client.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
                try await Task.sleep(nanoseconds: 100_000_000)
                #expect(server.connectionCount == 1)
            }  // client closes here
            for _ in 0..<50 where cancelled.load(ordering: .relaxed) == 0 {
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            #expect(cancelled.load(ordering: .relaxed) == 1)
            #expect(server.connectionCount == 0)
        }
    }

    /// The same long-poll from a client that only shut down its sending side is answered.
    @Test func answersAParkedLongPollWhoseClientHalfClosed() async throws {
        let handler: HTTPServer.Handler = { _, writer in
            writer.startStreaming(status: .ok, headers: [:])
            writer.probeWhenInputCloses([0x20])
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
                writer.writeChunk(Array("done".utf8))
                writer.finishStreaming()
            }
        }
        try await withServer(handler: handler) { port, _ in
            let client = try TestClient(port: port)
            try client.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
            shutdown(client.descriptor, Int32(SHUT_WR))
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.bodyText == " done")
            #expect(client.isClosedByServer())
        }
    }

    /// Runs a client's timed exchange on a thread of its own: its sleeps keep time even while the
    /// suite's other tests hold the cooperative threads in blocking reads (in CI, 200 ms task
    /// sleeps stretched past a 3 s idle timeout).
    func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result(catching: body)) }.start()
        }
    }

    @Test func answers503BeyondTheConnectionLimit() async throws {
        try await withServer({ $0.maxConnections = 2 }) { port, _ in
            let first = try TestClient(port: port)
            let second = try TestClient(port: port)
            try first.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = try first.readResponse()
            try second.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = try second.readResponse()
            let third = try TestClient(port: port)
            let response = try third.readResponse()
            #expect(response.status == 503)
            #expect(response.header("Retry-After") == "1")
            #expect(third.isClosedByServer())
            // The first two still work.
            try first.send("GET /again HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try first.readResponse().status == 200)
        }
    }

    @Test func parseErrorsAreAnsweredAsJSONAndClose() async throws {
        try await withServer { port, _ in
            let cases: [(String, Int)] = [
                ("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
                ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
                ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
                ("GET / HTTP/1.1\nHost: x\r\n\r\n", 400),
            ]
            for (input, status) in cases {
                let client = try TestClient(port: port)
                try client.send(input)
                let response = try client.readResponse()
                #expect(response.status == status, "\(input.debugDescription)")
                #expect(response.header("Content-Type")?.hasPrefix("application/json") == true)
                #expect(response.bodyText.contains("\"reason\""))
                #expect(client.isClosedByServer())
            }
        }
    }

    @Test func shutdownLetsInFlightRequestsFinish() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.port = 0
        let received = Atomic<Bool>(false)
        let server = HTTPServer(configuration: configuration) { _, writer in
            received.store(true, ordering: .sequentiallyConsistent)
            DispatchQueue.global().asyncAfter(deadline: .now() + 1) {
                writer.respond(HTTPResponse(status: .ok, body: Array("finished".utf8)))
            }
        }
        let (_, port) = try server.start()
        let client = try TestClient(port: port)
        try client.send("GET /in-flight HTTP/1.1\r\nHost: x\r\n\r\n")
        while !received.load(ordering: .sequentiallyConsistent) { try await Task.sleep(nanoseconds: 10_000_000) }
        let idle = try TestClient(port: port)
        await server.shutdown()
        let response = try client.readResponse()
        #expect(response.bodyText == "finished")
        #expect(client.isClosedByServer())
        #expect(idle.isClosedByServer())
        #expect(throws: (any Error).self) { _ = try TestClient(port: port) }
    }

    @Test func routerMatchesStaticAndPatternRoutes() {
        var router = HTTPRouter()
        router.add("GET", "/limits", HTTPServerTests.echo)
        router.add("POST", "/database/1/:container/:environment/:database/records/modify", HTTPServerTests.echo)
        guard case .found(let route, let parameters) = router.match(method: "POST", path: "/database/1/iCloud.a/development/private/records/modify") else {
            Issue.record("pattern route did not match")
            return
        }
        #expect(route.pattern.hasSuffix("records/modify"))
        #expect(parameters == ["container": "iCloud.a", "environment": "development", "database": "private"])
        if case .found = router.match(method: "HEAD", path: "/limits") {} else { Issue.record("HEAD should use the GET route") }
        if case .methodNotAllowed(let allowed) = router.match(method: "DELETE", path: "/limits") {
            #expect(allowed == ["GET", "HEAD"])
        } else { Issue.record("expected 405") }
        if case .notFound = router.match(method: "GET", path: "/database/1/a/b/c/records/unknown") {} else { Issue.record("expected 404") }
        if case .notFound = router.match(method: "POST", path: "/database/1//development/private/records/modify") {} else { Issue.record("empty segment must not match") }
        // Many paths of one pattern: each binds its own values.
        for round in 0..<2 {
            for index in 0..<1_100 {
                guard case .found(_, let again) = router.match(method: "POST", path: "/database/1/iCloud.c\(index)/production/private/records/modify") else {
                    Issue.record("round \(round): path \(index) did not match")
                    return
                }
                #expect(again["container"] == "iCloud.c\(index)" && again["environment"] == "production")
            }
        }
        if case .methodNotAllowed = router.match(method: "GET", path: "/database/1/iCloud.c1/production/private/records/modify") {} else {
            Issue.record("a POST route is not a GET's")
        }
        router.add("GET", "/database/1/:container/:environment/:database/records/modify", HTTPServerTests.echo)
        if case .found = router.match(method: "GET", path: "/database/1/iCloud.c1/production/private/records/modify") {} else {
            Issue.record("a route added later is found")
        }
    }

    @Test func routerListsEveryMethodItServesForOptionsAsterisk() {
        var router = HTTPRouter()
        #expect(router.methods.isEmpty)
        router.add("GET", "/limits", HTTPServerTests.echo)
        router.add("POST", "/database/1/:container/records/modify", HTTPServerTests.echo)
        router.add("PUT", "/assets/1/:id", HTTPServerTests.echo)
        #expect(router.methods == ["GET", "HEAD", "POST", "PUT"])
    }
}
