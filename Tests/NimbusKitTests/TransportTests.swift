import Foundation
import Testing
@testable import NimbusKit

/// An in-process server for the transport seam: answers from a script, in order, and keeps what
/// it was sent (after the interceptors).
final class ScriptedTransport: HTTPTransport {
    private let state: Locked<(answers: [Result<HTTPAnswer, any Error>], sent: [HTTPRequest])>

    init(_ answers: [Result<HTTPAnswer, any Error>]) { state = Locked((answers, [])) }

    var sent: [HTTPRequest] { state.withLock { $0.sent } }

    func send(_ request: HTTPRequest) async throws -> HTTPAnswer {
        let next = state.withLock { state -> Result<HTTPAnswer, any Error>? in
            state.sent.append(request)
            return state.answers.isEmpty ? nil : state.answers.removeFirst()
        }
        guard let next else { Issue.record("an unscripted request: \(request.method) \(request.url)"); return HTTPAnswer(status: 599) }
        return try next.get()
    }

    static func json(_ status: Int, _ body: String, headers: [String: String] = [:]) -> Result<HTTPAnswer, any Error> {
        .success(HTTPAnswer(status: status, headers: headers.merging(["Content-Type": "application/json"]) { a, _ in a }, body: Data(body.utf8)))
    }
}

/// Sleeps the retry interceptor asked for, without waiting.
final class SleepLog: Sendable {
    private let seconds = Locked<[TimeInterval]>([])
    var all: [TimeInterval] { seconds.withLock { $0 } }
    func sleep(_ value: TimeInterval) { seconds.withLock { $0.append(value) } }
}

/// Request paths of NimbusKit without a server: retry and credential interceptors, error
/// mapping, and what the typed wire layer writes and reads.
@Suite("transport seam")
struct TransportTests {
    let sleeps = SleepLog()

    func container(_ base: ScriptedTransport) -> Container {
        let configuration = NimbusConfiguration(serverURL: URL(string: "http://nimbus.test/")!, token: "first")
        let log = sleeps
        let retry = RetryInterceptor(sleep: { log.sleep($0) })
        return Container(identifier: "iCloud.test", configuration: configuration,
                         transport: Transport(configuration: configuration, base: base, retry: retry))
    }

    static let tryAgain = ScriptedTransport.json(503, #"{"serverErrorCode":"TRY_AGAIN_LATER","reason":"the database is unreachable","retryAfter":1.5}"#)

    @Test func aTryAgainLaterIsSentAgainNoSoonerThanItsRetryAfter() async throws {
        let server = ScriptedTransport([Self.tryAgain, ScriptedTransport.json(200, #"{"userRecordName":"_u1"}"#)])
        #expect(try await container(server).currentUserRecordName() == "_u1")
        #expect(server.sent.count == 2)
        #expect(sleeps.all.count == 1 && sleeps.all[0] >= 1.5)
        // A proxy's 503 page during a restart: its Retry-After header is the wait.
        let proxied = ScriptedTransport([.success(HTTPAnswer(status: 503, headers: ["Retry-After": "2"], body: Data("<html>".utf8))),
                                         ScriptedTransport.json(200, #"{"userRecordName":"_u1"}"#)])
        #expect(try await container(proxied).currentUserRecordName() == "_u1")
        #expect(sleeps.all.count == 2 && sleeps.all[1] >= 2)
    }

    @Test func retriesEndAfterTwoAndTheCallerGetsTheServersError() async throws {
        let server = ScriptedTransport([Self.tryAgain, Self.tryAgain, Self.tryAgain])
        await #expect { try await container(server).currentUserRecordName() } throws: { error in
            let error = error as? NimbusError
            return error?.code == .serviceUnavailable && error?.retryAfter == 1.5 && error?.serverErrorCode == "TRY_AGAIN_LATER"
        }
        #expect(server.sent.count == 3)
    }

    @Test func aLongWaitAThrottleAndNoAnswerGoToTheCallerAtOnce() async throws {
        let long = ScriptedTransport([.success(HTTPAnswer(status: 503, headers: ["Retry-After": "30"], body: Data()))])
        await #expect { try await container(long).currentUserRecordName() } throws: { ($0 as? NimbusError)?.retryAfter == 30 }
        #expect(long.sent.count == 1)
        let throttled = ScriptedTransport([ScriptedTransport.json(429, #"{"serverErrorCode":"THROTTLED","reason":"slow down","retryAfter":1}"#)])
        await #expect { try await container(throttled).currentUserRecordName() } throws: { ($0 as? NimbusError)?.code == .requestRateLimited }
        #expect(throttled.sent.count == 1)
        let unreachable = ScriptedTransport([.failure(URLError(.cannotConnectToHost))])
        await #expect { try await container(unreachable).currentUserRecordName() } throws: { ($0 as? NimbusError)?.code == .networkFailure }
        #expect(unreachable.sent.count == 1)
        #expect(sleeps.all.isEmpty)
    }

    @Test func authorizedRequestsCarryTheCurrentCredentialAndLimitsNone() async throws {
        let user = ScriptedTransport.json(200, #"{"userRecordName":"_u1"}"#)
        let server = ScriptedTransport([user, ScriptedTransport.json(200, #"{"maxOperationsPerRequest":7}"#), user])
        let container = container(server)
        _ = try await container.currentUserRecordName()
        #expect(try await container.limits().maxOperationsPerRequest == 7)
        container.replaceCredential("second")
        _ = try await container.currentUserRecordName()
        let sent = server.sent
        #expect(sent.map { $0.headers["Authorization"] } == ["Bearer first", nil, "Bearer second"])
        #expect(sent.map(\.url.path) == ["/database/1/iCloud.test/development/private/users/current", "/limits",
                                         "/database/1/iCloud.test/development/private/users/current"])
    }

    @Test func answersThatAreNotTheProtocolMapByStatus() async throws {
        let cases: [(Result<HTTPAnswer, any Error>, NimbusError.Code)] = [
            (.success(HTTPAnswer(status: 401, body: Data("<html>login</html>".utf8))), .notAuthenticated),
            (.success(HTTPAnswer(status: 500, body: Data("crash".utf8))), .internalError),
            (.success(HTTPAnswer(status: 502, body: Data())), .serviceUnavailable),
            (ScriptedTransport.json(401, #"{"serverErrorCode":"AUTHENTICATION_FAILED","reason":"revoked"}"#), .notAuthenticated),
            (ScriptedTransport.json(200, #"{"userRecordName": 7}"#), .serverResponseBad),
            (ScriptedTransport.json(200, #"[1, 2]"#), .serverResponseBad),
            (ScriptedTransport.json(200, #"{"userRecordName": "a""#), .serverResponseBad),
        ]
        for (answer, code) in cases {
            await #expect { try await container(ScriptedTransport([answer])).currentUserRecordName() } throws: {
                ($0 as? NimbusError)?.code == code
            }
        }
    }

    @Test func aSaveWritesTheModifyBodyAndReadsTheTypedAnswer() async throws {
        let saved = #"{"records":[{"recordName":"r1","recordType":"Note","zoneID":{"zoneName":"Z"},"recordChangeTag":"t2","#
            + #""fields":{"title":{"value":"hello","type":"STRING"},"n":{"value":3,"type":"INT64"},"w":{"value":2.5,"type":"DOUBLE"}},"#
            + #""created":{"timestamp":1700000000000,"userRecordName":"_u1"}}]}"#
        let server = ScriptedTransport([ScriptedTransport.json(200, "{}"), ScriptedTransport.json(200, saved)])
        var record = Record(recordType: "Note", id: RecordID(recordName: "r1", zoneID: ZoneID("Z")))
        record.set("title", "hello")
        let back = try await container(server).privateDatabase.save(record)
        #expect(back.changeTag == "t2" && back["title"] == .string("hello") && back["n"] == .int64(3) && back["w"] == .double(2.5))
        #expect(back.created?.timestamp == Date(timeIntervalSince1970: 1_700_000_000))
        let modify = try #require(server.sent.last)
        #expect(modify.url.path.hasSuffix("/private/records/modify") && modify.method == "POST")
        #expect(modify.headers["Content-Type"] == "application/json")
        let body = try JSON.decodeObject(try #require(modify.body))
        #expect(body["zoneID"] == ["zoneName": "Z"])
        #expect(body["operations"]?.arrayValue?.first?["record"]?["fields"]?["title"] == ["value": "hello", "type": "STRING"])
    }

    @Test func theSharedSHA256AgreesWithThePlatformHasher() {
        for size in [0, 1, 55, 56, 64, 1000, 70_000] {
            let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
            var software = SoftwareChecksum()
            software.update(data.prefix(size / 3))
            software.update(data.dropFirst(size / 3))
            #expect(software.finalizeBase64() == Checksum.of(data), "\(size) bytes")
        }
    }
}
