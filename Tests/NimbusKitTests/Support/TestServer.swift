import Foundation
@testable import NimbusKit
#if canImport(Glibc)
import Glibc
#endif

/// The real `nimbus` binary on a fresh database of the test cluster, for end-to-end tests of
/// NimbusKit. Needs `NIMBUS_TEST_DATABASE_URL` and `NIMBUS_TEST_PG_BIN` (set by Tests/run.sh);
/// without them the tests fail, never skip.
final class TestServer: @unchecked Sendable {
    // Safe: `process`, `port` and `url` change only in start/stop, which a test calls from one task.
    let databaseURL: String
    let binary: URL
    let logFile: URL
    let extraArguments: [String]
    private(set) var process: Process?
    private(set) var port: Int = 0
    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    static let container = "iCloud.com.nimbus.KitTests"

    private init(databaseURL: String, binary: URL, logFile: URL, extraArguments: [String]) {
        self.databaseURL = databaseURL
        self.binary = binary
        self.logFile = logFile
        self.extraArguments = extraArguments
    }

    /// A fresh database and a server on it.
    static func start(_ extraArguments: [String] = []) throws -> TestServer {
        let environment = ProcessInfo.processInfo.environment
        guard let adminURL = environment["NIMBUS_TEST_DATABASE_URL"], let pgBin = environment["NIMBUS_TEST_PG_BIN"] else {
            throw TestFailure("NIMBUS_TEST_DATABASE_URL / NIMBUS_TEST_PG_BIN are not set: run Tests/run.sh "
                + "(or source /tmp/nimbus-dev-pg.env from Tests/test-postgres.sh)")
        }
        let name = "nimbuskit_\(UUID().uuidString.prefix(8).lowercased())"
        try run(URL(fileURLWithPath: pgBin).appendingPathComponent("createdb"), ["--maintenance-db=\(adminURL)", name])
        let databaseURL = adminURL.replacingOccurrences(of: "postgresql:///postgres", with: "postgresql:///\(name)")
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("nimbuskit-\(name).log")
        let server = TestServer(databaseURL: databaseURL, binary: nimbusBinary(), logFile: log, extraArguments: extraArguments)
        try server.launch(port: 0)
        return server
    }

    /// The `nimbus` binary: `NIMBUS_BIN`, else the one built beside the test bundle.
    static func nimbusBinary() -> URL {
        if let path = ProcessInfo.processInfo.environment["NIMBUS_BIN"] { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("nimbus")
    }

    private func launch(port requested: Int) throws {
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let handle = try FileHandle(forWritingTo: logFile)
        let process = Process()
        process.executableURL = binary
        // The rate limit is off unless a test sets it (one token drives many requests here).
        let rateLimit = extraArguments.contains("--requests-per-second-per-token") ? [] : ["--requests-per-second-per-token", "0"]
        process.arguments = ["serve", "--database-url", databaseURL, "--listen", "127.0.0.1:\(requested)",
                             "--prune-interval", "0s", "--event-loops", "1", "--pool-size", "4", "--admin-listen", "off"] + rateLimit + extraArguments
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let text = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
            if let range = text.range(of: #"listening on http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression) {
                port = Int(text[range].split(separator: ":").last ?? "") ?? 0
                return
            }
            if !process.isRunning { throw TestFailure("nimbus serve exited: \(text.suffix(2000))") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw TestFailure("nimbus serve did not listen within 60 s")
    }

    /// Stops the server (SIGTERM: parked requests are answered, in-flight ones finish).
    func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        self.process = nil
    }

    /// Starts the server again on the same port.
    func restart() throws {
        stop()
        let deadline = Date().addingTimeInterval(10)
        while true {
            do {
                try launch(port: port)
                return
            } catch where Date() < deadline {
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
    }

    /// An admin command against this server's database; returns its standard output.
    @discardableResult
    func admin(_ arguments: [String]) throws -> String {
        try TestServer.run(binary, arguments + ["--database-url", databaseURL])
    }

    /// A user and a device token for it.
    func device(user: String, device: String) throws -> String {
        _ = try? admin(["user", "add", user])
        let output = try admin(["token", "issue", user, "--device", device])
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("token: ") }) else {
            throw TestFailure("token issue printed no token: \(output)")
        }
        return String(line.dropFirst("token: ".count))
    }

    /// Through a chaos proxy, requests time out sooner: on Linux, FoundationNetworking (libcurl)
    /// resends a POST whose reused connection died on a new one without its body, and that request
    /// then waits for its timeout (docs/client.md).
    func configuration(token: String, url: URL? = nil, cache: URL? = nil) -> NimbusConfiguration {
        NimbusConfiguration(serverURL: url ?? self.url, token: token, requestTimeout: url == nil ? 10 : 2, assetCacheDirectory: cache)
    }

    func container(token: String, url: URL? = nil, cache: URL? = nil) -> Container {
        Container(identifier: TestServer.container, configuration: configuration(token: token, url: url, cache: cache))
    }

    @discardableResult
    static func run(_ executable: URL, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw TestFailure("\(executable.lastPathComponent) \(arguments.joined(separator: " ")) exited "
                + "\(process.terminationStatus): \(text) \(String(decoding: errorData, as: UTF8.self))")
        }
        return text
    }

    deinit { stop() }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A fresh temporary folder.
func temporaryDirectory(_ prefix: String = "nimbuskit") -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Polls `condition` until it holds or `seconds` pass.
func eventually(_ seconds: Double = 20, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try await Task.sleep(nanoseconds: 50_000_000)
    }
    return try await condition()
}
