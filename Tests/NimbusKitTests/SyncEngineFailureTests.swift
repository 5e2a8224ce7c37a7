import Foundation
import Testing
@testable import NimbusKit
#if canImport(Glibc)
import Glibc
#endif

/// Issue 31's failure paths against the real server: one change's bad input never blocks the
/// rest, an interrupted upload arrives once, tokens move only after the app applied the changes,
/// and fetched assets are local files before the app sees them.
@Suite("SyncEngine failure paths against the real server")
struct SyncEngineFailureTests {
    @Test func aMissingAssetFileAmongTwentyChangesParksThatOneAndSendsTheOther19() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let mac = try Device.make(server, token: try server.device(user: "gone", device: "mac"))
        let folder = temporaryDirectory("images")
        var records: [Record] = []
        for n in 0..<20 {
            let file = folder.appendingPathComponent("image-\(n).png")
            try Data(repeating: UInt8(n), count: 2048 + n).write(to: file)
            // The cache clean-up removed one image before the app enqueued its record. (A file
            // removed after the enqueue is still sent: the engine keeps a link to it until the
            // server has it — SyncJournalTests.)
            if n == 7 { try FileManager.default.removeItem(at: file) }
            var record = event("copy \(n)", name: "copy-\(n)")
            record.set("image", Asset(fileURL: file))
            records.append(record)
            try await mac.save(record)
        }

        let report = await mac.engine.sendChanges()
        #expect(report.sent == 19)
        #expect(report.parked.map(\.recordID) == [records[7].id])
        #expect(report.left == 0 && report.stoppedBy == nil)
        let status = await mac.engine.status
        #expect(status.pendingCount == 0)
        #expect(status.failed.map(\.recordID) == [records[7].id])
        #expect(status.failed.first?.cause.code == .assetFileNotFound)
        #expect(status.failed.first?.cause.reason.contains("image-7.png") == true)
        let onServer = try await serverContents(mac.database)
        #expect(Set(onServer.keys) == Set(records.map(\.id)).subtracting([records[7].id]))
        #expect(onServer.values.allSatisfy { $0.fields["image"]?.assetValue?.fileChecksum != nil })

        // The file is back: a retry sends it.
        try Data(repeating: 7, count: 2055).write(to: folder.appendingPathComponent("image-7.png"))
        try await mac.engine.retryFailed()
        #expect(await mac.engine.sendChanges().sent == 1)
        #expect(try await serverContents(mac.database).count == 20)
    }

    @Test func anUploadCutAt30PercentArrivesOnceAndNothingIsParked() async throws {
        try await interruptedUpload(mode: "cut")
    }

    @Test func anUploadStalledPastTheBodyTimeoutArrivesOnceAndNothingIsParked() async throws {
        try await interruptedUpload(mode: "stall")
    }

    /// A 20 MiB asset through a relay process that cuts or stalls its first upload at 30%; the
    /// server's body timeout is 2 s, so a stalled or half-resent body is answered 408 quickly.
    private func interruptedUpload(mode: String) async throws {
        let server = try TestServer.start(["--body-timeout-seconds", "2"])
        defer { server.stop() }
        let relay = try UploadRelay(mode: mode, fraction: 0.3, upstreamPort: server.port)
        defer { relay.stop() }
        let token = try server.device(user: "big-\(mode)", device: "mac")
        let configuration = NimbusConfiguration(serverURL: relay.url, token: token, requestTimeout: 20,
                                                assetCacheDirectory: temporaryDirectory("assets"))
        let database = Container(identifier: TestServer.container, configuration: configuration).privateDatabase
        let replica = MemoryReplica()
        let engine = try SyncEngine(database: database, stateURL: temporaryDirectory("state").appendingPathComponent("sync.json"),
                                    delegate: replica, retryBackoff: Backoff(base: 0.05, cap: 1))
        let file = temporaryDirectory("video").appendingPathComponent("clip.mov")
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        var bytes = Data(count: 20 << 20)
        bytes.withUnsafeMutableBytes { buffer in
            for i in stride(from: 0, to: buffer.count, by: 8) { buffer.storeBytes(of: UInt64.random(in: 0...UInt64.max), toByteOffset: i, as: UInt64.self) }
        }
        try bytes.write(to: file)
        var record = event("a long clip", name: "clip")
        record.set("video", Asset(fileURL: file))
        replica.edit(record)
        try await engine.enqueue(.save(record))

        let sent = try await eventually(120) {
            await engine.sendChanges()
            let status = await engine.status
            return status.pendingCount == 0 || !status.failed.isEmpty
        }
        let status = await engine.status
        #expect(sent && status.pendingCount == 0, "still pending: \(status)")
        #expect(status.failed.isEmpty, "parked: \(status.failed.map(\.cause))")
        #expect(relay.counts.triggered == 1, "the relay never interfered: \(relay.counts)")
        #expect(relay.counts.uploads >= 2, "the upload was not sent again: \(relay.counts)")
        // Once on the server, with the whole file's bytes.
        let direct = server.container(token: token).privateDatabase
        let changes = try await direct.changes(in: .default, since: nil, resultsLimit: 400)
        #expect(changes.modified.map(\.id) == [record.id])
        let asset = changes.modified.first?.fields["video"]?.assetValue
        #expect(asset?.fileChecksum == Checksum.of(bytes) && asset?.size == Int64(bytes.count))
    }

    @Test func aReleasedDelegateMakesTheFetchThrowAndARelaunchGetsEveryChange() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let writer = try Device.make(server, token: try server.device(user: "rel", device: "phone"))
        for n in 0..<53 { try await writer.save(event("item \(n)")) }
        #expect(try await writer.flush())
        let token = try server.device(user: "rel", device: "mac")
        let database = server.container(token: token, cache: temporaryDirectory("assets")).privateDatabase
        let stateURL = temporaryDirectory("state").appendingPathComponent("sync.json")

        // The app passed a delegate nothing retains.
        let engine = try SyncEngine(database: database, stateURL: stateURL, delegate: MemoryReplica())
        await #expect(throws: NimbusError.self) { try await engine.fetchChanges() }
        var state = await engine.state
        #expect(state.zoneTokens.isEmpty && state.databaseToken == nil)

        // A delegate that throws: the fetch throws, and no token moves either.
        let failing = FailingReplica()
        let second = try SyncEngine(database: database, stateURL: stateURL, delegate: failing)
        await #expect(throws: FailingReplica.Refused.self) { try await second.fetchChanges() }
        state = await second.state
        #expect(state.zoneTokens.isEmpty && state.databaseToken == nil)

        // Relaunched with a delegate the app keeps: every change arrives.
        let replica = MemoryReplica()
        let relaunched = try SyncEngine(database: database, stateURL: stateURL, delegate: replica)
        try await relaunched.fetchChanges()
        #expect(replica.snapshot.count == 53)
        state = await relaunched.state
        #expect(!state.zoneTokens.isEmpty)
    }

    @Test func afterAFetchEveryReturnedAssetIsALocalFileBeforeTheAppTouchesIt() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let writer = try Device.make(server, token: try server.device(user: "pre", device: "phone"))
        let folder = temporaryDirectory("photos")
        var expected: [RecordID: Data] = [:]
        var bytesOf: [Int: Data] = [:]
        for n in 0..<12 {
            var record = event("photo \(n)")
            // Two records share their bytes with another: downloaded once, both local.
            let source = n % 5 == 4 ? n - 1 : n
            if source == n {
                bytesOf[n] = Data((0..<(65_536 + n)).map { UInt8(truncatingIfNeeded: $0 &* (n + 3)) })
                try bytesOf[n]?.write(to: folder.appendingPathComponent("p\(n).jpg"))
            }
            record.set("image", Asset(fileURL: folder.appendingPathComponent("p\(source).jpg")))
            expected[record.id] = bytesOf[source]
            try await writer.save(record)
        }
        #expect(try await writer.flush())
        let reader = AssetCheckingReplica()
        let database = server.container(token: try server.device(user: "pre", device: "mac"), cache: temporaryDirectory("cache")).privateDatabase
        let engine = try SyncEngine(database: database, stateURL: temporaryDirectory("state").appendingPathComponent("s.json"), delegate: reader)
        try await engine.fetchChanges()
        #expect(reader.seen.count == 12)
        #expect(reader.notLocal.isEmpty, "assets without a local file when applied: \(reader.notLocal)")
        // The files are the right bytes, and reading them needs no server.
        server.stop()
        for (id, file) in reader.seen {
            #expect(try Data(contentsOf: file) == expected[id], "\(id.recordName)")
        }
    }
}

@Suite("Smaller engine items against the real server")
struct SyncEngineSmallItemTests {
    @Test func aRevokedDeviceGetsANewTokenWhileTheEngineRunsAndItsOutboxGoesThrough() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        _ = try? server.admin(["user", "add", "rev"])
        func issue(_ device: String) throws -> (id: String, token: String) {
            let lines = try server.admin(["token", "issue", "rev", "--device", device]).split(separator: "\n")
            let value = { (key: String) in lines.first { $0.hasPrefix(key) }.map { String($0.dropFirst(key.count)) } ?? "" }
            return (value("token-id: "), value("token: "))
        }
        let first = try issue("mac")
        let mac = try Device.make(server, token: first.token)
        try server.admin(["token", "revoke", first.id])
        try await mac.save(event("written after the revoke"))
        let refused = await mac.engine.sendChanges()
        #expect(refused.stoppedBy?.code == .notAuthenticated && refused.left == 1)

        await mac.engine.replaceCredential(try issue("mac again").token)
        let report = await mac.engine.sendChanges()
        #expect(report.sent == 1 && report.left == 0 && report.stoppedBy == nil)
        #expect(try await serverContents(mac.database).count == 1)
    }

    @Test func aTimeoutSaysWhatTimedOutAndAfterHowLong() async throws {
        // A listener that accepts connections (the kernel's backlog) and never answers.
        let (listener, port) = try ChaosProxy.loopbackListener()
        defer { close(listener) }
        let url = URL(string: "http://127.0.0.1:\(port)")!
        let container = Container(identifier: "iCloud.test", configuration: NimbusConfiguration(serverURL: url, token: "t", requestTimeout: 1))
        do {
            _ = try await container.currentUserRecordName()
            Issue.record("a server that never answers answered")
        } catch let error as NimbusError {
            #expect(error.code == .networkFailure && error.isRetryable)
            #expect(error.reason.contains("timed out after 1 s"), "\(error.reason)")
            #expect(error.reason.contains("127.0.0.1:\(port)/database/1/"), "\(error.reason)")
            #expect(!error.reason.contains("NSURLErrorDomain"), "\(error.reason)")
        }
    }
}

/// A delegate whose `apply` always throws.
final class FailingReplica: SyncEngineDelegate, @unchecked Sendable {
    struct Refused: Error {}
    func syncEngine(_ engine: SyncEngine, apply changes: FetchedChanges) async throws { throw Refused() }
}

/// A delegate that looks at each applied record's asset file at the moment it is handed over.
final class AssetCheckingReplica: SyncEngineDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var files: [RecordID: URL] = [:]
    private var missing: [String] = []
    var seen: [RecordID: URL] { lock.withLock { files } }
    var notLocal: [String] { lock.withLock { missing } }

    func syncEngine(_ engine: SyncEngine, apply changes: FetchedChanges) async throws {
        for record in changes.modified {
            let file = record.fields["image"]?.assetValue?.fileURL
            lock.withLock {
                if let file, file.isFileURL, FileManager.default.fileExists(atPath: file.path) {
                    files[record.id] = file
                } else {
                    missing.append(record.id.recordName)
                }
            }
        }
    }
}

/// Tests/integration/upload-relay.py in its own process: a loopback relay that cuts or stalls the
/// first large upload it carries.
final class UploadRelay: @unchecked Sendable {
    // Safe: set once in init.
    private let process = Process()
    private let statusFile: URL
    let port: Int
    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    init(mode: String, fraction: Double, upstreamPort: Int) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("integration/upload-relay.py")
        statusFile = temporaryDirectory("relay").appendingPathComponent("status")
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, mode, String(fraction), String(upstreamPort), statusFile.path]
        process.standardOutput = output
        try process.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        guard let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw TestFailure("upload-relay.py printed no port: \(line)")
        }
        self.port = port
    }

    /// What the relay saw: connections, large request bodies, and whether it interfered.
    var counts: (connections: Int, uploads: Int, triggered: Int) {
        let fields = ((try? String(contentsOf: statusFile, encoding: .utf8)) ?? "").split(separator: " ")
            .compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard fields.count >= 3 else { return (0, 0, 0) }
        return (fields[0], fields[1], fields[2])
    }

    /// Of `counts.uploads`, those whose body was chunked (a body of unknown length: a sealed upload).
    var chunkedUploads: Int {
        let fields = ((try? String(contentsOf: statusFile, encoding: .utf8)) ?? "").split(separator: " ")
            .compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        return fields.count >= 4 ? fields[3] : 0
    }

    /// SIGKILL: a child of the test process inherits its blocked signals (SIGTERM among them), so
    /// `terminate()` would wait for ever.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}
