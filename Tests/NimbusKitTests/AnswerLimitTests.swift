import Foundation
import Testing
@testable import NimbusKit

/// An answer is bounded by what its request can return (hardening 6l: an endless body had been
/// buffered to 185 MB after 20 s): past that it is cut off with a sentence, not buffered.
@Suite struct AnswerLimitTests {
    /// `body`'s error, or a failure once `seconds` pass (an endless answer is still being read).
    private func failure(within seconds: Double, _ body: @escaping @Sendable () async throws -> Void) async throws -> NimbusError {
        let outcome = try await withThrowingTaskGroup(of: Result<Void, any Error>?.self) { group in
            group.addTask {
                do { try await body(); return .success(()) } catch { return .failure(error) }
            }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        switch outcome {
        case nil: throw TestFailure("still reading the answer after \(seconds) s")
        case .success?: throw TestFailure("the request succeeded")
        case .failure(let error as NimbusError)?: return error
        case .failure(let error)?: throw TestFailure("not a NimbusError: \(error)")
        }
    }

    /// The client closed the connections: the server sends nothing more. (How far past the limit
    /// it got first depends on the load: see `AnswerCollector`.)
    private func expectStopped(_ server: BadServer) async throws {
        try await Task.sleep(nanoseconds: 300_000_000)
        let sent = server.bytesSent
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(server.bytesSent == sent, "the server is still sending: \(sent) → \(server.bytesSent) bytes")
    }

    private func container(_ server: BadServer) -> Container {
        Container(identifier: "iCloud.com.nimbus.Tests", configuration: NimbusConfiguration(serverURL: server.url, token: "t"))
    }

    @Test func anEndlessAnswerIsCutOffAtWhatTheRequestCanReturn() async throws {
        let server = try BadServer(answer: .endless)
        defer { server.stop() }
        let database = container(server).privateDatabase
        // One record: at most 2 × maxRecordBytes + 16 KiB, and 1 MiB for the rest.
        let bound = AnswerLimit.records(1, .defaults, "").bytes
        #expect(bound == 2 * (1 << 20) + (16 << 10) + (1 << 20))
        let lookup = try await failure(within: 20) { _ = try await database.lookup([RecordID(recordName: "a")]) }
        #expect(lookup.code == .serverResponseBad)
        #expect(lookup.reason.contains("passed \(bound) bytes"), "\(lookup.reason)")
        #expect(lookup.reason.contains("a records/lookup answer of at most 1 records"), "\(lookup.reason)")
        #expect(lookup.isRetryable)
        // An answer without records: 16 MiB.
        let zones = try await failure(within: 20) { _ = try await database.zones() }
        #expect(zones.reason.contains("passed \(16 << 20) bytes"), "\(zones.reason)")
        #expect(zones.reason.contains("an answer without records"), "\(zones.reason)")
        try await expectStopped(server)
    }

    @Test func anEndlessAssetDownloadStopsPastTheAssetsSize() async throws {
        let server = try BadServer(answer: .endless)
        defer { server.stop() }
        let cache = temporaryDirectory("cache")
        let database = Container(identifier: "iCloud.com.nimbus.Tests",
                                 configuration: NimbusConfiguration(serverURL: server.url, token: "t", assetCacheDirectory: cache)).privateDatabase
        let asset = Asset(fileChecksum: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", size: 1000,
                          downloadURL: server.url.appendingPathComponent("asset"))
        let error = try await failure(within: 20) { _ = try await database.downloadAsset(asset) }
        #expect(error.code == .serverResponseBad)
        #expect(error.reason.contains("passed \(1000 + (64 << 10)) bytes"), "\(error.reason)")
        #expect(error.reason.contains("the download of an asset of 1000 bytes"), "\(error.reason)")
        let blocking = try await failure(within: 20) { _ = try database.downloadAssetBlocking(asset) }
        #expect(blocking.reason.contains("the download of an asset of 1000 bytes"), "\(blocking.reason)")
        try await expectStopped(server)
    }

    @Test func aDeclaredLengthPastTheLimitIsRefusedBeforeTheBody() async throws {
        let server = try BadServer(answer: .hugeContentLength)
        defer { server.stop() }
        let error = try await failure(within: 20) { _ = try await container(server).privateDatabase.zones() }
        #expect(error.code == .serverResponseBad)
        #expect(error.reason.contains("(1000000000000 when it was cut off)"), "\(error.reason)")
    }

    @Test func nimbusSyncFailsWithTheSentenceInsteadOfBuffering() async throws {
        let server = try BadServer(answer: .endless)
        defer { server.stop() }
        let tool = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("nimbus-sync")
        let process = Process()
        process.executableURL = tool
        process.arguments = ["fetch", temporaryDirectory("state").appendingPathComponent("sync.json").path]
        process.environment = ProcessInfo.processInfo.environment.merging(["NIMBUS_URL": server.url.absoluteString, "NIMBUS_TOKEN": "t"]) { $1 }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < deadline { try await Task.sleep(nanoseconds: 50_000_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationReason == .exit && process.terminationStatus == 1, "\(process.terminationStatus): \(text)")
        #expect(text.contains("passed \(16 << 20) bytes"), "\(text)")
    }
}
