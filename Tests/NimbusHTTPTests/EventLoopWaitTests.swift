import Foundation
import Glibc
import Testing
@testable import NimbusHTTP
import NimbusSupport

/// `LoopContext.waitUntilReady` on a real event loop: a task on the loop waits for a socket of a
/// pair while the other end is written from another thread. The loop keeps a waited-for
/// descriptor in its epoll (one-shot) and re-arms it per wait, so the cases that matter are the
/// first wait, a second wait on the same descriptor, a descriptor already ready when armed, and
/// a number that was closed and now names another socket.
@Suite struct EventLoopWaitTests {
    let tests = HTTPServerTests()

    /// A connected pair of Unix stream sockets.
    static func socketPair() -> (Int32, Int32)? {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else { return nil }
        return (ends[0], ends[1])
    }

    /// Sends one byte without SIGPIPE (the suite's process does not ignore it).
    static func sendByte(_ descriptor: Int32, _ byte: UInt8) {
        var value = byte
        _ = Glibc.send(descriptor, &value, 1, Int32(MSG_NOSIGNAL))
    }

    /// Sends one byte to `descriptor` from another thread after `milliseconds`.
    static func writeLater(_ descriptor: Int32, _ byte: UInt8, milliseconds: Int) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { sendByte(descriptor, byte) }
    }

    static func readByte(_ descriptor: Int32) -> UInt8? {
        var value: UInt8 = 0
        return Glibc.recv(descriptor, &value, 1, Int32(MSG_DONTWAIT)) == 1 ? value : nil
    }

    /// `/wait`: the steps on the loop, answered as what each wait read ("-" for nothing).
    static let waiting: HTTPServer.Handler = { request, writer in
        HTTPServerStreamingTests.onLoop(request) {
            guard let loop = request.loop, let (mine, theirs) = socketPair() else {
                return writer.respond(HTTPResponse(status: .internalServerError, body: Array("no loop or no socket pair".utf8)))
            }
            var seen: [String] = []
            func note(_ byte: UInt8?) { seen.append(byte.map { String(UnicodeScalar($0)) } ?? "-") }
            // First wait: added to the epoll; the byte comes later from another thread.
            writeLater(theirs, UInt8(ascii: "a"), milliseconds: 50)
            await loop.waitUntilReady(mine, writable: false)
            note(readByte(mine))
            // Second wait on the same descriptor: re-armed.
            writeLater(theirs, UInt8(ascii: "b"), milliseconds: 50)
            await loop.waitUntilReady(mine, writable: false)
            note(readByte(mine))
            // Ready before the wait: reported as soon as it is armed.
            sendByte(theirs, UInt8(ascii: "c"))
            await loop.waitUntilReady(mine, writable: false)
            note(readByte(mine))
            // Writable at once.
            await loop.waitUntilReady(mine, writable: true)
            // The number now names another socket (the first one closed, so epoll forgot it).
            guard let (other, otherPeer) = socketPair(), dup2(other, mine) == mine else {
                return writer.respond(HTTPResponse(status: .internalServerError, body: Array("dup2 failed".utf8)))
            }
            close(other)
            close(theirs)
            writeLater(otherPeer, UInt8(ascii: "d"), milliseconds: 50)
            await loop.waitUntilReady(mine, writable: false)
            note(readByte(mine))
            close(mine)
            close(otherPeer)
            writer.respond(HTTPResponse(status: .ok, body: Array(seen.joined().utf8)))
        }
    }

    @Test func aTaskOnTheLoopWaitsForItsSocketAgainAndAgain() async throws {
        try await tests.withServer(handler: Self.waiting) { port, _ in
            let client = try TestClient(port: port, timeoutSeconds: 5)
            try client.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.bodyText == "abcd")
            // The loop still serves its connections.
            try client.send("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
    }
}
