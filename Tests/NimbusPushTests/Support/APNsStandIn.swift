import Foundation
import Glibc
import NimbusPush
import NimbusSupport

/// Tests/push/apns-standin.py run by a test: a real HTTP/2-over-TLS server with its own CA, checking
/// the provider token against a key made for this test. Started with bounded waits, stopped by PID.
/// Needs Debian's python3 with python3-h2 and python3-cryptography; without them the test fails.
final class APNsStandIn: @unchecked Sendable {
    // @unchecked: `process` and `port` change only in start/stop/restart, which the one test owning
    // this stand-in calls from its own task.
    static let keyID = "KEY1234567"
    static let teamID = "TEAM123456"
    static let topic = "com.example.nimbus.tests"

    let directory: ScratchDirectory
    let credentials: APNsCredentials
    let publicKeyPath: String
    private var process: Process?
    private(set) var port = 0

    var caFile: String { directory.file("state/ca.pem") }
    var logPath: String { directory.file("requests.jsonl") }
    var controlPath: String { directory.file("control.json") }
    var baseURL: String { "https://127.0.0.1:\(port)" }

    /// Debian's interpreter: apt's python3-h2 lands in its dist-packages (a python3 earlier on PATH,
    /// pyenv's say, may not see it).
    static let python = "/usr/bin/python3"
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("push/apns-standin.py").path

    private init(directory: ScratchDirectory, credentials: APNsCredentials, publicKeyPath: String) {
        self.directory = directory
        self.credentials = credentials
        self.publicKeyPath = publicKeyPath
    }

    /// `--http1`: the stand-in plays a server that is not APNs, answering over HTTP/1.1.
    private var extraArguments: [String] = []

    /// A new key, CA and stand-in on a free loopback port (`http1`: one that answers over HTTP/1.1).
    static func start(http1: Bool = false) throws -> APNsStandIn {
        try checkPython()
        let directory = try ScratchDirectory("nimbus-apns")
        let key: (privatePEM: String, publicPath: String)
        let credentials: APNsCredentials
        do {
            key = try TestKeys.makeP256(in: directory)
            credentials = try APNsCredentials(key: APNsProviderKey(pem: key.privatePEM), keyID: keyID, teamID: teamID)
        } catch {
            directory.remove()
            throw error
        }
        let standIn = APNsStandIn(directory: directory, credentials: credentials, publicKeyPath: key.publicPath)
        standIn.extraArguments = http1 ? ["--http1"] : []
        do {
            try standIn.launch(port: 0)
        } catch {
            standIn.finish()
            throw error
        }
        return standIn
    }

    private static func checkPython() throws {
        let advice = "the APNs stand-in needs Debian's python3 with python3-h2 and python3-cryptography: "
            + "run deploy/install-deps.sh python3-h2 python3-cryptography, or Tests/run.sh"
        guard FileManager.default.isExecutableFile(atPath: python) else { throw TestFailure("\(advice) (no \(python))") }
        let outcome = try Subprocess.run(python, ["-c", "import h2, cryptography"])
        guard outcome.succeeded else {
            throw TestFailure("\(advice) (\(outcome.output.split(separator: "\n").last ?? ""))")
        }
    }

    /// A client for this stand-in (its URL for both environments, its CA trusted).
    func makeClient(clock: any WallClock = TestClock(), requestTimeoutMilliseconds: Int = 10_000) throws -> APNsClient {
        let configuration = APNsClient.Configuration(baseURL: baseURL, caFile: caFile, connectTimeoutMilliseconds: 5_000,
                                                     requestTimeoutMilliseconds: requestTimeoutMilliseconds)
        return try APNsClient(credentials: credentials, configuration: configuration, clock: clock)
    }

    private func launch(port requested: Int) throws {
        let output = directory.file("standin-\(UUID().uuidString.prefix(8)).out")
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = [Self.script, "--state-dir", directory.file("state"), "--public-key", publicKeyPath,
                             "--key-id", Self.keyID, "--team-id", Self.teamID, "--topics", Self.topic,
                             "--port", String(requested), "--log", logPath, "--control", controlPath] + extraArguments
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        self.process = process
        // Bounded: the first start also makes the CA and certificate with openssl.
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if let range = text.range(of: #"listening on 127\.0\.0\.1:[0-9]+"#, options: .regularExpression) {
                port = Int(text[range].split(separator: ":").last ?? "") ?? 0
                return
            }
            if !process.isRunning { throw TestFailure("the APNs stand-in exited: \(text.suffix(2000))") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        stop()
        throw TestFailure("the APNs stand-in did not listen within 30 s")
    }

    /// Stops the stand-in (SIGTERM: it drops every connection), SIGKILL after 5 s.
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

    /// Starts it again on the same port, with the same CA and key.
    func restart() throws {
        stop()
        let deadline = Date().addingTimeInterval(10)
        while true {
            do {
                return try launch(port: port)
            } catch where Date() < deadline {
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
    }

    /// Stops it and removes its files.
    func finish() {
        stop()
        directory.remove()
    }

    /// The control file's commands (see the script's header); `[:]` clears them.
    func command(_ control: JSONValue) throws {
        try Data(control.serialized()).write(to: URL(fileURLWithPath: controlPath), options: .atomic)
    }

    /// Every request it logged so far, in order.
    func requests() throws -> [JSONValue] {
        guard FileManager.default.fileExists(atPath: logPath) else { return [] }
        let text = try String(contentsOfFile: logPath, encoding: .utf8)
        return try text.split(separator: "\n").map { try JSONValue.parse(String($0)) }
    }
}
