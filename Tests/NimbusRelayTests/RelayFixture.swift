import Foundation
import NimbusHTTP
import NimbusPush
import NimbusSupport
import Testing
@testable import NimbusRelay

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A wall clock the test moves by hand.
final class ManualClock: WallClock {
    private let now = Lock<Int64>(1_790_000_000_000)
    func nowMilliseconds() -> Int64 { now.withLock { $0 } }
    func advance(milliseconds: Int64) { now.withLock { $0 += milliseconds } }
}

/// Stands where APNs would be: records every push and answers as told.
final class RecordingTransport: PushTransport {
    private let state = Lock<(sent: [APNsRequest], answer: APNsResponse, failure: APNsClientError?)>(([], APNsResponse(status: 200), nil))

    var sent: [APNsRequest] { state.withLock { $0.sent } }
    var answer: APNsResponse {
        get { state.withLock { $0.answer } }
        set { state.withLock { $0.answer = newValue } }
    }
    var failure: APNsClientError? {
        get { state.withLock { $0.failure } }
        set { state.withLock { $0.failure = newValue } }
    }

    func send(_ request: APNsRequest) async throws -> APNsResponse {
        try state.withLock { state in
            if let failure = state.failure { throw failure }
            state.sent.append(request)
            return state.answer
        }
    }

    func shutdown() {}
}

/// A relay service over a scratch data directory holding one installation ("op1").
struct RelayFixture {
    let directory: String
    let file: InstallationFile
    let credentials: RelayCredentials
    let clock = ManualClock()
    let transport = RecordingTransport()
    let service: RelayService

    init(pushesPerMinute: Int = 600) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-relay-\(UUID().uuidString.prefix(8))").path
        file = InstallationFile(directory: directory)
        let credentials = try RelayCredentials.make(name: "op1")
        try file.update { (list: inout [Installation]) throws(InstallationFile.Failure) in
            list.append(Installation(name: "op1", id: credentials.installationID, signingKey: credentials.signingKey, createdAt: 1))
        }
        self.credentials = credentials
        var configuration = RelayService.Configuration()
        configuration.pushesPerMinute = pushesPerMinute
        configuration.topics = ["com.example.App"]
        service = RelayService(book: InstallationBook(file: file), transport: transport, configuration: configuration, clock: clock)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func push(token: String = "a1b2c3d4e5f60718293a4b5c6d7e8f90", topic: String = "com.example.App") -> [UInt8] {
        RelayWire.encode(APNsRequest(deviceToken: token, environment: .production, topic: topic, pushType: .alert, priority: .immediate,
                                     apnsID: UUID(), expiration: 1_790_000_000, payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8)))
    }

    /// `POST /v1/push` with `body`, signed with `credentials` (the fixture's own unless given) at `timestamp` (default: now).
    func signed(_ body: [UInt8], with credentials: RelayCredentials? = nil, timestamp: Int64? = nil) -> HTTPRequest {
        let signature = RelaySignature.sign(method: "POST", path: RelayWire.pushPath, body: body, credentials: credentials ?? self.credentials,
                                            timestamp: timestamp ?? clock.nowMilliseconds() / 1000)
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        for field in signature.headerFields { headers.add(name: field.name, value: field.value) }
        return HTTPRequest(head: HTTPRequestHead(method: "POST", target: RelayWire.pushPath, headers: headers), body: body)
    }

    /// The answer is a CloudKit-shaped error with this status and code, whose reason contains `text`.
    func expectError(_ response: HTTPResponse, status: Int, code: String, saying text: String,
                     sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status.code == status, sourceLocation: sourceLocation)
        let object = try JSONValue.parse(response.body)
        #expect(object["serverErrorCode"] == .string(code), sourceLocation: sourceLocation)
        #expect(object["uuid"]?.stringValue != nil, sourceLocation: sourceLocation)
        let reason = object["reason"]?.stringValue ?? ""
        #expect(reason.contains(text), "reason: \(reason)", sourceLocation: sourceLocation)
    }
}
