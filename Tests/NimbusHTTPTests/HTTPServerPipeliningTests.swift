import Foundation
import Glibc
import Testing
@testable import NimbusHTTP

/// Pipelined requests across read-buffer boundaries, and clients that half-close after sending:
/// every request is answered, in order (docs/api.md: a half-closing client gets every answer).
@Suite struct HTTPServerPipeliningTests {
    let tests = HTTPServerTests()

    /// Sends `bytes` from another thread in pieces of the given sizes (cycled), then optionally
    /// shuts down the sending side.
    static func sendInBackground(_ descriptor: Int32, _ bytes: [UInt8], pieces: [Int], shutDown: Bool = false) {
        Thread {
            var offset = 0
            var piece = 0
            while offset < bytes.count {
                let size = min(pieces[piece % pieces.count], bytes.count - offset)
                piece += 1
                let sent = bytes[offset..<(offset + size)].withUnsafeBytes { send(descriptor, $0.baseAddress, size, Int32(MSG_NOSIGNAL)) }
                guard sent > 0 else { return }
                offset += sent
            }
            if shutDown { shutdown(descriptor, Int32(SHUT_WR)) }
        }.start()
    }

    static func requests(_ count: Int, slowEvery: Int = 0) -> [UInt8] {
        var bytes: [UInt8] = []
        for index in 0..<count {
            let path = slowEvery > 0 && index % slowEvery == slowEvery - 1 ? "/slow" : "/item/\(index)"
            bytes += Array("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        }
        return bytes
    }

    static func expectedBody(_ index: Int, slowEvery: Int = 0) -> String {
        slowEvery > 0 && index % slowEvery == slowEvery - 1 ? "GET /slow 0" : "GET /item/\(index) 0"
    }

    @Test func thousandsOfPipelinedRequestsInOneWriteAreAnsweredInOrder() async throws {
        try await tests.withServer { port, _ in
            let client = try TestClient(port: port)
            let count = 4000  // ~150 KB of requests: more than two 64 KiB read buffers
            Self.sendInBackground(client.descriptor, Self.requests(count), pieces: [1 << 20])
            for index in 0..<count {
                let response = try client.readResponse()
                #expect(response.status == 200)
                if response.bodyText != Self.expectedBody(index) {
                    Issue.record("response \(index): \(response.bodyText)")
                    return
                }
            }
        }
    }

    @Test func pipelinedRequestsInOddPiecesWithSlowOnesAmongThemAreAnsweredInOrder() async throws {
        try await tests.withServer { port, _ in
            let client = try TestClient(port: port)
            let count = 600
            Self.sendInBackground(client.descriptor, Self.requests(count, slowEvery: 150), pieces: [7, 13, 1, 70_001, 4096, 3])
            for index in 0..<count {
                let response = try client.readResponse()
                if response.bodyText != Self.expectedBody(index, slowEvery: 150) {
                    Issue.record("response \(index): \(response.bodyText)")
                    return
                }
            }
        }
    }

    @Test func aClientThatHalfClosesGetsEveryAnswerThenTheConnectionCloses() async throws {
        try await tests.withServer { port, _ in
            let client = try TestClient(port: port)
            // A slow (asynchronously answered) request first, then fast ones, then FIN.
            var bytes = Array("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
            bytes += Self.requests(3)
            bytes += Array("POST /item/body HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello".utf8)
            Self.sendInBackground(client.descriptor, bytes, pieces: [bytes.count], shutDown: true)
            #expect(try client.readResponse().bodyText == "GET /slow 0")
            for index in 0..<3 { #expect(try client.readResponse().bodyText == "GET /item/\(index) 0") }
            #expect(try client.readResponse().bodyText == "POST /item/body 5")
            #expect(client.isClosedByServer())
        }
    }

    @Test func aHalfCloseInTheMiddleOfARequestClosesWithoutAnAnswer() async throws {
        try await tests.withServer { port, _ in
            let client = try TestClient(port: port)
            let bytes = Array("GET /item/1 HTTP/1.1\r\nHost: x\r\n\r\nGET /item/2 HTTP/1.1\r\nHo".utf8)
            Self.sendInBackground(client.descriptor, bytes, pieces: [bytes.count], shutDown: true)
            #expect(try client.readResponse().bodyText == "GET /item/1 0")
            #expect(client.isClosedByServer())
        }
    }
}
