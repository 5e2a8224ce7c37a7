import Foundation
import NimbusKit
#if canImport(Glibc)
import Glibc
#endif

/// The real `nimbus` binary on a fresh database of the test cluster (as NimbusKitTests' TestServer),
/// for NimbusKitCK's behaviour tests. Needs `NIMBUS_TEST_DATABASE_URL` and `NIMBUS_TEST_PG_BIN`;
/// without them the tests fail, never skip.
final class LiveServer: @unchecked Sendable {
    // Safe: set once in start; stop is called from one task.
    let databaseURL: String
    let binary: URL
    private var process: Process?
    private(set) var port = 0
    var url: URL { URL(string: "http://127.0.0.1:\(port)") ?? URL(fileURLWithPath: "/") }

    static let container = "iCloud.com.nimbus.CKTests"

    private init(databaseURL: String, binary: URL) {
        self.databaseURL = databaseURL
        self.binary = binary
    }

    static func start() throws -> LiveServer {
        let environment = ProcessInfo.processInfo.environment
        guard let adminURL = environment["NIMBUS_TEST_DATABASE_URL"], let pgBin = environment["NIMBUS_TEST_PG_BIN"] else {
            throw LiveFailure("NIMBUS_TEST_DATABASE_URL / NIMBUS_TEST_PG_BIN are not set: run Tests/run.sh "
                + "(or source the env file of Tests/test-postgres.sh)")
        }
        let name = "nimbusck_\(UUID().uuidString.prefix(8).lowercased())"
        try run(URL(fileURLWithPath: pgBin).appendingPathComponent("createdb"), ["--maintenance-db=\(adminURL)", name])
        let binary = environment["NIMBUS_BIN"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("nimbus")
        let server = LiveServer(databaseURL: adminURL.replacingOccurrences(of: "postgresql:///postgres", with: "postgresql:///\(name)"),
                                binary: binary)
        try server.launch()
        return server
    }

    private func launch() throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("nimbusck-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = binary
        process.arguments = ["serve", "--database-url", databaseURL, "--listen", "127.0.0.1:0", "--prune-interval", "0s", "--event-loops", "1",
                             "--pool-size", "4", "--admin-listen", "off", "--requests-per-second-per-token", "0"]
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: #"listening on http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression) {
                port = Int(text[range].split(separator: ":").last ?? "") ?? 0
                return
            }
            if !process.isRunning { throw LiveFailure("nimbus serve exited: \(text.suffix(2000))") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw LiveFailure("nimbus serve did not listen within 60 s")
    }

    func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        self.process = nil
    }

    /// A device token of `user` and its server configuration.
    func configuration(user: String, device: String) throws -> NimbusConfiguration {
        _ = try? LiveServer.run(binary, ["user", "add", user, "--database-url", databaseURL])
        let output = try LiveServer.run(binary, ["token", "issue", user, "--device", device, "--database-url", databaseURL])
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("token: ") }) else {
            throw LiveFailure("token issue printed no token: \(output)")
        }
        return NimbusConfiguration(serverURL: url, token: String(line.dropFirst("token: ".count)), requestTimeout: 10)
    }

    @discardableResult
    static func run(_ executable: URL, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else { throw LiveFailure("\(executable.lastPathComponent) \(arguments) failed: \(text)") }
        return text
    }

    deinit { stop() }
}

struct LiveFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
