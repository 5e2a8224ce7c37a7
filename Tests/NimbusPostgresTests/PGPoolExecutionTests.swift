import Foundation
import Glibc
import NimbusHTTP
import NimbusPostgres
import NimbusSupport
import Testing

/// A statement runs as its caller states (`Execution`), whatever thread it is on: `.onLoop` waits
/// for the server through the loop the caller's task runs on — its rows are decoded on the loop's
/// thread, and the loop serves other connections meanwhile —; `.blocking` runs inline on the
/// caller's thread; `.offloaded` on a thread of the pool's.
@Suite(.timeLimit(.minutes(1))) struct PGPoolExecutionTests {
    /// One event loop, so that both connections share it. `/statement` runs a 1.5 s statement
    /// from a task on the request's loop, stated `.onLoop`, and answers where its row was decoded;
    /// anything else is answered at once on the loop.
    @Test func aStatementStatedOnTheLoopWaitsThereAndLeavesTheLoopFree() async throws {
        try await TestDatabase.with { database in
            let pool = PGPool(configuration: .init(url: database.url))
            defer { pool.close() }
            var configuration = HTTPServer.Configuration()
            configuration.port = 0
            configuration.eventLoopCount = 1
            let server = HTTPServer(configuration: configuration) { request, writer in
                guard request.path == "/statement", let loop = request.loop else {
                    return writer.respond(HTTPResponse(status: .ok, body: Array("pong".utf8)))
                }
                Task(executorPreference: loop.taskExecutor) {
                    do {
                        let decodedOnLoop = try await pool.queryFirst("SELECT pg_sleep(1.5)", on: .onLoop(loop)) { _ in loop.isCurrent }
                        writer.respond(HTTPResponse(status: .ok, body: Array((decodedOnLoop == true ? "on the loop" : "elsewhere").utf8)))
                    } catch {
                        writer.respond(HTTPResponse(status: .internalServerError, body: Array("\(error)".utf8)))
                    }
                }
            }
            let (_, port) = try server.start()
            let slow = Task.detached { try Self.get("/statement", port: port) }
            try await Task.sleep(for: .milliseconds(200))
            let quick = try await Task.detached { try Self.get("/ping", port: port) }.value
            let answer = try await slow.value
            await server.shutdown()
            #expect(answer.body == "on the loop")
            #expect(quick.body == "pong")
            // Blocking the loop would hold /ping until the statement ends (~1.3 s more).
            #expect(quick.seconds < 0.9, "the loop answered another connection only after \(quick.seconds) s")
        }
    }

    @Test func aStatementStatedBlockingRunsOnTheCallersThreadAndOffloadedElsewhere() async throws {
        try await TestDatabase.with { database in
            let pool = PGPool(configuration: .init(url: database.url))
            defer { pool.close() }
            // One thread: the task always resumes on the same one.
            let executor = BlockingExecutor(maxThreads: 1)
            let (blocking, offloaded) = try await Task(executorPreference: executor) { () async throws -> (Bool?, Bool?) in
                let caller = pthread_self()
                let blocking = try await pool.queryFirst("SELECT 1", on: .blocking) { _ in pthread_equal(pthread_self(), caller) != 0 }
                let offloaded = try await pool.queryFirst("SELECT 1", on: .offloaded) { _ in pthread_equal(pthread_self(), caller) != 0 }
                return (blocking, offloaded)
            }.value
            #expect(blocking == true)
            #expect(offloaded == false)
        }
    }

    /// A GET over a fresh loopback connection: the answer's body and how long it took.
    static func get(_ path: String, port: Int) throws -> (body: String, seconds: Double) {
        let start = monotonicNanoseconds()
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestSetupError("socket failed") }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TestSetupError("connect failed") }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
        guard send(descriptor, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { throw TestSetupError("send failed") }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
        }
        let text = String(decoding: received, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw TestSetupError("no answer: \(text)") }
        return (String(text[split.upperBound...]), Double(monotonicNanoseconds() - start) / 1e9)
    }
}
