import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything the engine must not forget: the outbox, parked failures, tokens and the
/// notification cursor. One file, replaced atomically.
struct SyncState: Sendable, Codable, Equatable {
    var formatVersion = 1
    var outbox: [OutboxEntry] = []
    var failed: [FailedChange] = []
    var zoneTokens: [String: SyncToken] = [:]
    /// Zones the engine syncs (learned from `zones/changes` and from sent changes).
    var zones: [String] = []
    var databaseToken: SyncToken?
    var notificationCursor: NotificationCursor?
    var lastSync: Date?
    var nextSequence: Int64 = 1
}

/// The engine's state file: written as temp file + fsync + rename + fsync of the folder, so that
/// after a crash at any instant the file holds either the old or the new state, whole.
struct SyncStateFile: Sendable {
    let url: URL

    func load() throws -> SyncState {
        guard FileManager.default.fileExists(atPath: url.path) else { return SyncState() }
        let data = try Data(contentsOf: url)
        do {
            return try JSONDecoder().decode(SyncState.self, from: data)
        } catch {
            throw NimbusError(.invalidArguments, reason: "The sync state file \(url.path) cannot be read (\(error)); "
                + "move it away to start over (pending changes in it would be lost).")
        }
    }

    func save(_ state: SyncState) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(state)
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        try write(data, to: temporary)
        guard rename(temporary.path, url.path) == 0 else {
            let code = errno
            unlink(temporary.path)
            throw SyncStateFile.failure("rename to \(url.path)", code)
        }
        // The rename is durable only once the folder's entry is on disk.
        let folder = open(directory.path, O_RDONLY)
        if folder >= 0 {
            _ = fsync(folder)
            close(folder)
        }
    }

    private func write(_ data: Data, to file: URL) throws {
        let fd = open(file.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw SyncStateFile.failure("open \(file.path)", errno) }
        defer { close(fd) }
        try data.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = systemWrite(fd, base + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw SyncStateFile.failure("write \(file.path)", errno)
                }
                offset += written
            }
        }
        guard fsync(fd) == 0 else { throw SyncStateFile.failure("fsync \(file.path)", errno) }
    }

    static func failure(_ what: String, _ code: Int32) -> NimbusError {
        NimbusError(.internalError, reason: "Saving the sync state failed (\(what): \(String(cString: strerror(code)))); "
            + "the change was not accepted.")
    }
}

/// `write(2)`, named so that it does not collide with `Data.write`.
@inline(__always)
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
