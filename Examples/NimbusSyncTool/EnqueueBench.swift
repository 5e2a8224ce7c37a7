import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NimbusKit

/// bench/client.sh's enqueue figures: the cost of one durable `enqueue` at several outbox sizes,
/// beside the physical floor (appending as many bytes to a file, with one fdatasync each) in the
/// same run. Offline: nothing is sent. Bytes are the process's `wchar` (bytes handed to write(2))
/// and `write_bytes` (bytes the kernel sent to the disk) of /proc/self/io.
enum EnqueueBench {
    static func run(_ arguments: [String], stateURL: URL, container: Container) async throws {
        guard let count = arguments.first.flatMap(Int.init), count > 0 else { fail(usage) }
        for pending in arguments.dropFirst().compactMap(Int.init) {
            let url = stateURL.appendingPathExtension("p\(pending)")
            try? FileManager.default.removeItem(at: url)
            let engine = try SyncEngine(database: container.privateDatabase, stateURL: url,
                                        delegate: PrintingReplica(printNames: false))
            for start in stride(from: 0, to: pending, by: 500) {
                try await engine.enqueue((start..<min(pending, start + 500)).map { .save(Bench.benchRecord($0, zone: .default)) })
            }
            let (engineSeconds, engineIO) = try await measure {
                for n in 0..<count { try await engine.enqueue(.save(Bench.benchRecord(pending + n, zone: .default))) }
            }
            let perEnqueue = max(1, Int(engineIO.logical / Int64(count)))
            let floorURL = url.appendingPathExtension("floor")
            let (floorSeconds, floorIO) = try await measure { try appendWithSync(floorURL, bytes: perEnqueue, times: count) }
            try? FileManager.default.removeItem(at: floorURL)
            let pendingAfter = await engine.status.pendingCount
            say("result enqueue pending=\(pending) pending_after=\(pendingAfter) enqueues=\(count) "
                + "us=\(Bench.format(engineSeconds / Double(count) * 1e6)) cpu_us=\(Bench.format(engineIO.cpu / Double(count) * 1e6)) bytes=\(engineIO.logical / Int64(count)) "
                + "disk_bytes=\(engineIO.disk / Int64(count)) floor_us=\(Bench.format(floorSeconds / Double(count) * 1e6)) "
                + "floor_cpu_us=\(Bench.format(floorIO.cpu / Double(count) * 1e6)) "
                + "floor_bytes=\(floorIO.logical / Int64(count)) floor_disk_bytes=\(floorIO.disk / Int64(count))")
        }
    }

    /// The physical floor: `times` appends of `bytes` bytes, each followed by one fdatasync.
    static func appendWithSync(_ url: URL, bytes: Int, times: Int) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600)
        guard fd >= 0 else { throw BenchFailure("open \(url.path): errno \(errno)") }
        defer { close(fd) }
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: bytes)
        for _ in 0..<times {
            guard chunk.withUnsafeBytes({ write(fd, $0.baseAddress, bytes) }) == bytes else { throw BenchFailure("write: errno \(errno)") }
            #if canImport(Glibc)
            guard fdatasync(fd) == 0 else { throw BenchFailure("fdatasync: errno \(errno)") }
            #else
            guard fsync(fd) == 0 else { throw BenchFailure("fsync: errno \(errno)") }
            #endif
        }
    }

    struct IO {
        var logical: Int64 = 0
        var disk: Int64 = 0
        /// CPU seconds (user + system) of the process.
        var cpu: Double = 0
    }

    static func measure(_ body: () async throws -> Void) async throws -> (Double, IO) {
        let before = counters()
        let start = Date()
        try await body()
        let seconds = Date().timeIntervalSince(start)
        let after = counters()
        return (seconds, IO(logical: after.logical - before.logical, disk: after.disk - before.disk, cpu: after.cpu - before.cpu))
    }

    /// This process's write counters (zeros where /proc is missing) and CPU time.
    static func counters() -> IO {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        var io = IO()
        io.cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return io }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":").map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, let value = Int64(parts[1]) else { continue }
            if parts[0] == "wchar" { io.logical = value }
            if parts[0] == "write_bytes" { io.disk = value }
        }
        return io
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
