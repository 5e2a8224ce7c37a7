import Foundation
import Glibc
import NimbusSupport
import Testing
@testable import NimbusPush

/// `RelayTransport` through a real `nimbus relay` process (the binary `swift build` made) in front of
/// the APNs stand-in: credentials from `nimbus relay installation add`, pushes arriving at the
/// stand-in with the relay's JWT, dead tokens coming back, a revoked installation refused.
@Suite(.serialized) struct RelayEndToEndTests {
    static let token = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

    @Test func pushesGoThroughTheRelayAndDeadTokensComeBack() async throws {
        let standIn = try APNsStandIn.start()
        defer { standIn.finish() }
        let relay = try RelayProcess(standIn: standIn)
        defer { relay.stop() }
        let credentialsFile = standIn.directory.file("op1.credentials")
        let added = try relay.cli(["installation", "add", "op1", "--output", credentialsFile])
        #expect(added.succeeded, "\(added.output)")
        let credentials = try RelayCredentials.load(path: credentialsFile)
        try relay.start()
        let transport = try RelayTransport(configuration: RelayTransport.Configuration(url: relay.url), credentials: credentials)
        defer { transport.shutdown() }

        let id = UUID()
        var alert = APNsClientTests.alert(apnsID: id)
        alert.collapseID = "zone-A"
        #expect(try await transport.send(alert) == APNsResponse(status: 200, apnsID: id))
        let arrived = try standIn.requests()
        try #require(arrived.count == 1)
        let headers = try #require(arrived[0]["headers"])
        #expect(headers[":path"] == .string("/3/device/" + Self.token))
        #expect(headers["apns-topic"] == .string(APNsStandIn.topic))
        #expect(headers["apns-push-type"] == "alert" && headers["apns-priority"] == "10")
        #expect(headers["apns-id"] == .string(id.uuidString.lowercased()))
        #expect(headers["apns-expiration"] == "1790000000" && headers["apns-collapse-id"] == "zone-A")
        #expect(arrived[0]["jwt"]?["kid"] == .string(APNsStandIn.keyID) && arrived[0]["jwt"]?["iss"] == .string(APNsStandIn.teamID))
        #expect(arrived[0]["payload"]?["aps"]?["mutable-content"] == 1)

        // Dead tokens: APNs' 410 and 400 come back as they were, for the sender to remove the registration.
        let gone = try await transport.send(APNsClientTests.alert(token: "ffff0410" + String(Self.token.dropFirst(8))))
        #expect(gone.status == 410 && gone.reason == .unregistered && gone.unregisteredAt != nil)
        let bad = try await transport.send(APNsClientTests.alert(token: "ffff0400" + String(Self.token.dropFirst(8))))
        #expect(bad.status == 400 && bad.reason == .badDeviceToken)

        // A forged secret for the same id is refused, and nothing reaches APNs.
        let forged = try RelayCredentials(name: "op1", installationID: credentials.installationID, secret: try RelayCredentials.make(name: "x").secret)
        let forger = try RelayTransport(configuration: RelayTransport.Configuration(url: relay.url), credentials: forged)
        defer { forger.shutdown() }
        await Self.expectRefused(forger, saying: "signature does not match")

        // Revoked while the relay runs: refused from the next request on.
        let revoked = try relay.cli(["installation", "revoke", "op1"])
        #expect(revoked.succeeded, "\(revoked.output)")
        await Self.expectRefused(transport, saying: "revoked")
        #expect(try standIn.requests().count == 3)
    }

    static func expectRefused(_ transport: RelayTransport, saying text: String, sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            let answer = try await transport.send(APNsClientTests.alert())
            Issue.record("the relay forwarded: \(answer)", sourceLocation: sourceLocation)
        } catch APNsClientError.connection(let failure) {
            #expect(failure.code == 401 && failure.detail.contains(text), "\(failure)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }
}

/// `nimbus relay` as a child process over a data directory inside the stand-in's scratch directory.
final class RelayProcess: @unchecked Sendable {
    // @unchecked: used by the one test that owns it, from its own task.
    static let binary = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent(".build/debug/nimbus").path

    let standIn: APNsStandIn
    let dataDirectory: String
    private var process: Process?
    private(set) var url = ""

    init(standIn: APNsStandIn) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw TestFailure("no nimbus binary at \(Self.binary): run swift build --build-tests first")
        }
        self.standIn = standIn
        dataDirectory = standIn.directory.file("relay-data")
    }

    /// `nimbus relay ARGUMENTS --data-dir DIR`, to completion.
    func cli(_ arguments: [String]) throws -> Subprocess.Outcome {
        try Subprocess.run(Self.binary, ["relay"] + arguments + ["--data-dir", dataDirectory])
    }

    func start() throws {
        let output = standIn.directory.file("relay.out")
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["relay", "--listen", "127.0.0.1:0", "--data-dir", dataDirectory, "--topics", APNsStandIn.topic, "--apns-key-file", standIn.directory.file("key.p8"),
                             "--apns-key-id", APNsStandIn.keyID, "--apns-team-id", APNsStandIn.teamID, "--apns-url", standIn.baseURL,
                             "--apns-ca-file", standIn.caFile, "--log-level", "debug"]
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if let range = text.range(of: #"listening on http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression) {
                url = String(text[range].dropFirst("listening on ".count))
                return
            }
            if !process.isRunning { throw TestFailure("nimbus relay exited: \(text.suffix(2000))") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        stop()
        throw TestFailure("nimbus relay did not listen within 20 s")
    }

    /// SIGTERM, SIGKILL after 5 s.
    func stop() {
        guard let process else { return }
        self.process = nil
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
