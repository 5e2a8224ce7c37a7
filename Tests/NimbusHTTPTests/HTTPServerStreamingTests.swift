import Foundation
import Glibc
import Synchronization
import Testing
@testable import NimbusHTTP
import NimbusSupport

/// Streamed request bodies (uploads, with the consumer pausing reading) and streamed answers
/// written with backpressure (downloads), over real loopback sockets.
@Suite struct HTTPServerStreamingTests {
    let tests = HTTPServerTests()

    /// Bodies of `/upload...` stream to the handler (up to 64 MiB); others are buffered.
    static func streamUploads(_ configuration: inout HTTPServer.Configuration) {
        configuration.bodyStreamLimit = { head in head.path.hasPrefix("/upload") ? 64 << 20 : nil }
    }

    /// Runs a handler's task on the event loop `request` came in on, as the API does: the suite's
    /// blocking reads may hold every thread of the cooperative pool.
    static func onLoop(_ request: HTTPRequest, _ body: @escaping @Sendable () async -> Void) {
        Task(executorPreference: request.loop?.taskExecutor ?? globalConcurrentExecutor) { await body() }
    }

    static func pattern(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 10) }
    }

    static func checksum(_ bytes: [UInt8], into sum: inout UInt64) {
        for byte in bytes { sum = sum &* 31 &+ UInt64(byte) }
    }

    /// `/upload`: starts reading late (the body piles up past the stream's high watermark, so
    /// reading pauses), then answers the body's length and checksum. `/upload/refuse`: answers 413
    /// without reading. Others: `HTTPServerTests.echo`.
    static let uploads: HTTPServer.Handler = { request, writer in
        guard let stream = request.bodyStream else { return HTTPServerTests.echo(request, writer) }
        if request.path == "/upload/refuse" {
            writer.respond(HTTPResponse(status: .contentTooLarge, body: Array("no".utf8)))
            return
        }
        onLoop(request) {
            var count = 0
            var sum: UInt64 = 0
            do {
                try await Task.sleep(nanoseconds: 300_000_000)
                while let chunk = try await stream.next() {
                    count += chunk.count
                    HTTPServerStreamingTests.checksum(chunk, into: &sum)
                }
                writer.respond(HTTPResponse(status: .ok, body: Array("\(count) \(sum)".utf8)))
            } catch {
                writer.respond(HTTPResponse(status: .badRequest, body: Array("\(error)".utf8)))
            }
        }
    }

    @Test func aStreamedUploadPausesForItsConsumerAndArrivesWhole() async throws {
        try await tests.withServer(Self.streamUploads, handler: Self.uploads) { port, _ in
            let client = try TestClient(port: port)
            let body = Self.pattern(6_000_000)
            var expected: UInt64 = 0
            Self.checksum(body, into: &expected)
            let head = Array("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
            HTTPServerPipeliningTests.sendInBackground(client.descriptor, head + body, pieces: [65_536, 1_000, 300_000])
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.bodyText == "\(body.count) \(expected)")
            // The connection carries the next request.
            try client.send("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().bodyText == "GET /after 0")
        }
    }

    @Test func anUploadRefusedBeforeItsBodyEndedClosesAfterTheAnswer() async throws {
        try await tests.withServer(Self.streamUploads, handler: Self.uploads) { port, _ in
            let client = try TestClient(port: port)
            try client.send("POST /upload/refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + String(repeating: "x", count: 1_000))
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(client.isClosedByServer())
        }
    }

    @Test func aStalledStreamedUploadFailsItsConsumerAndIsAnswered408() async throws {
        final class Failure: Sendable { let reason = Mutex<String?>(nil) }
        let failure = Failure()
        let handler: HTTPServer.Handler = { request, _ in
            guard let stream = request.bodyStream else { return }
            Self.onLoop(request) {
                do {
                    while try await stream.next() != nil {}
                } catch {
                    failure.reason.withLock { $0 = "\(error)" }
                }
            }
        }
        let configure: (inout HTTPServer.Configuration) -> Void = {
            Self.streamUploads(&$0)
            $0.bodyTimeoutSeconds = 0.5
            $0.minBodyBytesPerSecond = 0
        }
        try await tests.withServer(configure, handler: handler) { port, _ in
            let client = try TestClient(port: port)
            try client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
            let response = try client.readResponse()
            #expect(response.status == 408)
            #expect(response.bodyText.contains("stalled for more than 0.5 seconds"))
            #expect(client.isClosedByServer())
            for _ in 0..<50 where failure.reason.withLock({ $0 }) == nil {
                try await Task.sleep(nanoseconds: 10_000_000)
            }
            #expect(failure.reason.withLock { $0 }?.contains("stalled") == true)
        }
    }

    /// `write` returns only once the outbound buffer is below its high watermark: a reader that
    /// waits holds the writer, and every byte arrives in order.
    @Test func aStreamedDownloadWaitsForASlowReaderAndArrivesWhole() async throws {
        let chunk = Self.pattern(1 << 20)
        let handler: HTTPServer.Handler = { request, writer in
            guard request.path == "/download" else { return HTTPServerTests.echo(request, writer) }
            writer.startStreaming(status: .ok, headers: ["Content-Type": "application/octet-stream"])
            Self.onLoop(request) {
                for _ in 0..<8 {
                    guard await writer.write(chunk) else { return }
                }
                writer.finishStreaming()
            }
        }
        try await tests.withServer(handler: handler) { port, _ in
            let client = try TestClient(port: port)
            try client.send("GET /download HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n")
            usleep(300_000)  // the socket's buffers and the outbound buffer fill before anything is read
            let response = try client.readResponse()
            #expect(response.header("Transfer-Encoding") == "chunked")
            #expect(response.body.count == 8 << 20)
            let intact = response.body == Array([[UInt8]](repeating: chunk, count: 8).joined())
            #expect(intact)
            #expect(try client.readResponse().bodyText == "GET /next 0")
        }
    }

    @Test func aFixedLengthDownloadCutShortClosesTheConnection() async throws {
        let handler: HTTPServer.Handler = { _, writer in
            writer.startStreaming(status: .ok, headers: [:], contentLength: 10)
            writer.writeChunk(Array("12345".utf8))
            writer.finishStreaming()
        }
        try await tests.withServer(handler: handler) { port, _ in
            let client = try TestClient(port: port)
            try client.send("GET /short HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(throws: TestClient.Failure.self) { _ = try client.readResponse() }
        }
    }
}
