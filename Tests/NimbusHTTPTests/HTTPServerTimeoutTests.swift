import Foundation
import Glibc
import Testing
@testable import NimbusHTTP
import NimbusSupport

/// The server's timers over real loopback sockets: stalled heads and bodies (408), the minimum
/// body rate, idle keep-alive connections, and parked requests that no timer may cut.
@Suite struct HTTPServerTimeoutTests {
    let tests = HTTPServerTests()

    @Test func parkedRequestsAreNotCutByIdleTimers() async throws {
        let handler: HTTPServer.Handler = { _, writer in
            DispatchQueue.global().asyncAfter(deadline: .now() + 1.5) {
                writer.respond(HTTPResponse(status: .ok, body: Array("late".utf8)))
            }
        }
        try await tests.withServer({ $0.headerTimeoutSeconds = 0.5; $0.keepAliveTimeoutSeconds = 0.5; $0.bodyTimeoutSeconds = 0.5 },
                             handler: handler) { port, _ in
            let client = try TestClient(port: port)
            try client.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().bodyText == "late")
        }
    }

    @Test func answersAStalledHeadWith408() async throws {
        try await tests.withServer({ $0.headerTimeoutSeconds = 0.5 }) { port, _ in
            let client = try TestClient(port: port)
            let start = Date()
            try client.send("GET / HTTP/1.1\r\nHost: x\r\n")
            let response = try client.readResponse()
            #expect(response.status == 408)
            #expect(Date().timeIntervalSince(start) >= 0.4)
            #expect(client.isClosedByServer())
        }
    }

    @Test func answersAStalledBodyWith408() async throws {
        try await tests.withServer({ $0.bodyTimeoutSeconds = 0.5 }) { port, _ in
            let client = try TestClient(port: port)
            try client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
            #expect(try client.readResponse().status == 408)
        }
    }

    /// minBodyBytesPerSecond: a body below the rate is cut off before its idle timeout runs out:
    /// 25 bytes earn 2 s + 0.25 s from the head, while the idle timeout runs 2 s from the last
    /// byte (1 s in, so at ~3 s). The client stops sending long before either deadline, so the
    /// 408 is never lost to a reset.
    @Test func answersABodyBelowTheMinimumRateWith408() async throws {
        try await tests.withServer({ $0.bodyTimeoutSeconds = 2; $0.minBodyBytesPerSecond = 100 }) { port, _ in
            let response = try await tests.onOwnThread { () -> TestClient.Response in
                let client = try TestClient(port: port)
                try client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n12345")
                usleep(1_000_000)
                try client.send("12345678901234567890")
                return try client.readResponse()
            }
            #expect(response.status == 408)
            let reason = String(decoding: response.body, as: UTF8.self)
            #expect(reason.contains("slower than 100 bytes per second"), "\(reason)")
        }
    }

    /// Above the minimum rate a body may take longer than the body timeout in total: 400 bytes
    /// at 100 B/s over 4 s against a 3 s body timeout and a minimum of 20 B/s (the bytes earn
    /// 3 s + 20 s).
    @Test func completesABodyAboveTheMinimumRate() async throws {
        try await tests.withServer({ $0.bodyTimeoutSeconds = 3; $0.minBodyBytesPerSecond = 20 }) { port, _ in
            let (status, seconds) = try await tests.onOwnThread { () -> (Int, Double) in
                let client = try TestClient(port: port)
                try client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 400\r\n\r\n")
                let start = monotonicNanoseconds()
                for _ in 0..<20 {
                    try client.send(String(repeating: "x", count: 20))
                    usleep(200_000)
                }
                let status = try client.readResponse().status
                return (status, Double(monotonicNanoseconds() - start) / 1e9)
            }
            #expect(status == 200)
            #expect(seconds > 3, "the body took longer than the body timeout")
        }
    }

    @Test func closesIdleKeepAliveConnectionsSilently() async throws {
        try await tests.withServer({ $0.keepAliveTimeoutSeconds = 0.5 }) { port, server in
            let client = try TestClient(port: port)
            try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = try client.readResponse()
            #expect(client.isClosedByServer())
            try await Task.sleep(nanoseconds: 50_000_000)
            #expect(server.connectionCount == 0)
        }
    }
}
