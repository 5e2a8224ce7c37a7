import Foundation
import Glibc
import Testing
@testable import NimbusHTTP
import NimbusSupport

/// Closing after an answer in stages (RFC 9112 §9.6): output at once, input once the client closes
/// its side or `lingerSeconds` pass, so input still arriving cannot reset the answer away.
@Suite struct HTTPServerClosingTests {
    private let server = HTTPServerTests()

    /// Polls `server.connectionCount` until it is `count`; the seconds that took, or nil after
    /// `limit`. Blocking on purpose: a suspended poll could resume late while other tests hold
    /// the cooperative threads, and measure their wait instead of the server's.
    private func secondsUntil(_ server: HTTPServer, hasConnections count: Int, limit: Double) -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < limit {
            if server.connectionCount == count { return Date().timeIntervalSince(start) }
            usleep(10_000)
        }
        return nil
    }

    @Test func aRefusalReachesAClientStillSendingItsBody() async throws {
        try await server.withServer({ $0.parserLimits.maxBodyBytes = 10 }) { port, httpServer in
            let client = try TestClient(port: port)
            try client.send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 4000000\r\n\r\n")
            // More body than the server would read and drop before an immediate close (256 KiB).
            let chunk = [UInt8](repeating: UInt8(ascii: "b"), count: 64 * 1024)
            for _ in 0..<16 { try client.send(chunk) }
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.bodyText.contains("LIMIT_EXCEEDED"))
            #expect(client.isClosedByServer(), "the server's side is shut down at once")
            #expect(httpServer.connectionCount == 1, "its input is still read until the client closes")
            Glibc.shutdown(client.descriptor, Int32(SHUT_WR))
            #expect(secondsUntil(httpServer, hasConnections: 0, limit: 1.5) != nil)
        }
    }

    @Test func aSocketLingersNoLongerThanLingerSeconds() async throws {
        try await server.withServer({ $0.headerTimeoutSeconds = 0.3; $0.lingerSeconds = 0.6 }) { port, httpServer in
            let client = try TestClient(port: port)
            let sent = Date()
            try client.send("GET / HTTP/1.1\r\nHost: x\r\n")
            #expect(try client.readResponse().status == 408)
            #expect(client.isClosedByServer())
            // The client neither sends nor closes: the socket closes at the linger deadline, 0.6 s
            // after the 408 that came 0.3 s after the request. Counted from the send, not from when
            // this thread read the answer (on a busy machine it read it late, and the close then
            // looked early); without a linger deadline the socket would stay open past the 3 s.
            let closedAfter = secondsUntil(httpServer, hasConnections: 0, limit: 3)
            _ = try #require(closedAfter)
            let seconds = Date().timeIntervalSince(sent)
            #expect(seconds >= 0.8 && seconds <= 3.5, "closed \(seconds) s after the request was sent (0.3 + 0.6 expected)")
        }
    }

    @Test func anAnsweredConnectionCloseEndsWithTheClientsClose() async throws {
        try await server.withServer({ $0.lingerSeconds = 30 }) { port, httpServer in
            let client = try TestClient(port: port)
            try client.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            #expect(client.isClosedByServer())
            client.close()
            let closedAfter = secondsUntil(httpServer, hasConnections: 0, limit: 2)
            #expect(closedAfter != nil, "the client's close ends the linger long before its 30 s")
        }
    }
}

@Suite struct LingeringSocketsTests {
    @Test func aSocketExpiresAtItsDeadlineAndNotOneNanosecondBefore() {
        var sockets = LingeringSockets(seconds: 2)
        let seven = sockets.add(7, now: 1_000)
        let five = sockets.add(5, now: 2_000)
        #expect(seven == 1_000 + 2_000_000_000)
        let early = sockets.expire(7, deadline: seven, now: seven - 1)
        let due = sockets.expire(7, deadline: seven, now: seven)
        #expect(!early && due)
        #expect(sockets.contains(5) && !sockets.contains(7))
        let again = sockets.expire(7, deadline: seven, now: .max)
        #expect(!again, "expired once")
        sockets.remove(5)
        let removed = sockets.expire(5, deadline: five, now: .max)
        #expect(sockets.count == 0 && !removed)
    }

    @Test func stoppingTakesEverySocketStillLingering() {
        var sockets = LingeringSockets(seconds: 1)
        for descriptor: Int32 in [9, 3, 6] { sockets.add(descriptor, now: 0) }
        #expect(sockets.removeAll() == [3, 6, 9])
        #expect(sockets.count == 0)
    }

    @Test func aStaleDeadlineDoesNotCloseTheNumberLingeringAgain() {
        var sockets = LingeringSockets(seconds: 1)
        let first = sockets.add(4, now: 0)
        sockets.remove(4)
        let second = sockets.add(4, now: 500)
        let stale = sockets.expire(4, deadline: first, now: second)
        #expect(!stale, "the first linger's entry is stale")
        #expect(sockets.contains(4))
        let due = sockets.expire(4, deadline: second, now: second)
        #expect(due)
    }
}
