import Foundation
import Testing
@testable import NimbusKit
#if canImport(Glibc)
import Glibc
#endif

/// A download killed mid-way leaves its `.partial-<pid>-…` file in the asset cache; the cache
/// removes such leftovers before its first download, and never the partial file of a live
/// download, in this process or another (`AssetCache+Partials.swift`).
@Suite("Stale partial downloads in the asset cache")
struct AssetCachePartialTests {
    /// The pid of a process that has ended (run and reaped).
    static func endedPID() throws -> pid_t {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try process.run()
        process.waitUntilExit()
        return process.processIdentifier
    }

    static func partials(_ directory: URL) -> Set<String> {
        Set(((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasPrefix(".partial-") })
    }

    static func touch(_ directory: URL, _ name: String, age: TimeInterval = 0) throws {
        let file = directory.appendingPathComponent(name)
        try Data("half a photo".utf8).write(to: file)
        if age > 0 { try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-age)], ofItemAtPath: file.path) }
    }

    @Test func leftoversOfEndedProcessesAndOldOnesGoPartialsThatMayBeLiveStay() throws {
        let directory = temporaryDirectory("partials")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let ended = try Self.endedPID()
        let stale = [".partial-\(ended)-\(UUID().uuidString)",                 // its process is gone
                     ".partial-\(getpid())-\(UUID().uuidString)-old",            // this pid, before this process (an hour ago)
                     ".partial-\(UUID().uuidString)-old"]                        // an older name, two days old
        let live = [".partial-\(getpid())-\(UUID().uuidString)",                 // this process's, written now
                    ".partial-1-\(UUID().uuidString)",                            // a running process's (init)
                    ".partial-\(UUID().uuidString)"]                              // an older name, fresh
        try Self.touch(directory, stale[0])
        _ = AssetCache(directory: directory)  // this process's first cache is no later than now
        try Self.touch(directory, stale[1], age: 3_600)
        try Self.touch(directory, stale[2], age: 2 * 86_400)
        for name in live { try Self.touch(directory, name) }
        try Data("cached".utf8).write(to: directory.appendingPathComponent("some-checksum"))

        let cache = AssetCache(directory: directory)
        // The first new partial file sweeps; its own name carries this process's pid.
        let partial = cache.newPartialFile()
        #expect(partial.lastPathComponent.hasPrefix(".partial-\(getpid())-"))
        #expect(Self.partials(directory) == Set(live), "\(Self.partials(directory))")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("some-checksum").path))
        // Once per cache: a leftover that appears later waits for the next cache (the next process).
        try Self.touch(directory, stale[0])
        _ = cache.newPartialFile()
        #expect(Self.partials(directory).contains(stale[0]))
        #expect(AssetCache(directory: directory).removeStalePartials() == [stale[0]])
    }

    /// A real `nimbus-sync fetch` downloading through a proxy that stalls the asset's body; its
    /// partial file survives a sweep while it runs, and goes at the next cache's first download
    /// once it was killed (SIGKILL). This process's own stalled download keeps its partial file
    /// throughout.
    @Test func aKilledProcessesPartialGoesALiveDownloadsStays() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let proxy = try ChaosProxy(upstreamPort: server.port)
        defer { proxy.stop() }
        let directory = temporaryDirectory("partials-live")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cacheDirectory = directory.appendingPathComponent("cache")
        let photo = directory.appendingPathComponent("photo.jpg")
        try Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: photo)
        let mac = server.container(token: try server.device(user: "ada", device: "mac")).privateDatabase
        var record = Record(recordType: "Photo", id: RecordID(recordName: "p1"))
        record["image"] = .asset(Asset(fileURL: photo))
        _ = try await mac.save(record)
        proxy.setMode(.stallBodies(over: 1_000_000))

        let token = try server.device(user: "ada", device: "phone")
        let tool = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("nimbus-sync")
        let process = Process()
        process.executableURL = tool
        process.arguments = ["fetch", directory.appendingPathComponent("sync.json").path]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "NIMBUS_URL": proxy.url.absoluteString, "NIMBUS_TOKEN": token, "NIMBUS_CONTAINER": TestServer.container,
            "NIMBUS_ASSET_CACHE": cacheDirectory.path]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var killed = false
        defer { if !killed { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        let childPrefix = ".partial-\(process.processIdentifier)-"
        let childPartial = try await Self.waitFor(cacheDirectory, prefix: childPrefix, while: process)

        // This process's own download of the same asset, stalled too (a long timeout).
        let configuration = NimbusConfiguration(serverURL: proxy.url, token: token, requestTimeout: 120, assetCacheDirectory: cacheDirectory)
        let phone = Container(identifier: TestServer.container, configuration: configuration).privateDatabase
        let asset = try #require(try await phone.record(for: record.id)["image"]?.assetValue)
        let ownDownload = Task { try await phone.downloadAsset(asset) }
        let ownPartial = try await Self.waitFor(cacheDirectory, prefix: ".partial-\(getpid())-", while: nil)

        // Both live: a sweep leaves them.
        #expect(AssetCache(directory: cacheDirectory).removeStalePartials().isEmpty)
        #expect(Self.partials(cacheDirectory) == [childPartial, ownPartial])

        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        killed = true
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(Self.partials(cacheDirectory).contains(childPartial), "the killed process left no partial file")

        // The next cache's first download (here: direct to the server, the same asset) sweeps first.
        let next = server.container(token: token, cache: cacheDirectory).privateDatabase
        let direct = try #require(try await next.record(for: record.id)["image"]?.assetValue)
        #expect(try Data(contentsOf: try await next.downloadAsset(direct)) == Data(contentsOf: photo))
        #expect(Self.partials(cacheDirectory) == [ownPartial], "\(Self.partials(cacheDirectory))")

        // The stalled download is cut; it fails and removes its own partial file.
        proxy.setMode(.pass)
        _ = await ownDownload.result
        #expect(Self.partials(cacheDirectory).isEmpty)
    }

    /// The name of the first partial file with `prefix` that has bytes in it (within 60 s).
    static func waitFor(_ directory: URL, prefix: String, while process: Process?) async throws -> String {
        for _ in 0..<600 {
            if let name = partials(directory).first(where: { $0.hasPrefix(prefix) }),
               ((try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path))?[.size] as? NSNumber)?.intValue ?? 0 > 0 {
                return name
            }
            if let process, !process.isRunning { throw TestFailure("nimbus-sync ended before its download started") }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        throw TestFailure("no partial file \(prefix)… appeared in \(directory.path)")
    }
}
