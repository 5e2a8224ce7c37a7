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
    /// Ids of the newest notifications handed to the app (by push or channel), so that one
    /// delivered both ways is shown once. Optional: state files of earlier versions lack it.
    var deliveredNotificationIDs: [String]?
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

    /// Replaces the file; `durable` adds the fsyncs that make it survive a power cut.
    func save(_ state: SyncState, cache: OutboxEncodingCache? = nil, durable: Bool = true) throws {
        let data = try (cache ?? OutboxEncodingCache()).encode(state)
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        try write(data, to: temporary, durable: durable)
        guard rename(temporary.path, url.path) == 0 else {
            let code = errno
            unlink(temporary.path)
            throw SyncStateFile.failure("rename to \(url.path)", code)
        }
        // The rename is durable only once the folder's entry is on disk.
        guard durable else { return }
        let folder = open(directory.path, O_RDONLY)
        if folder >= 0 {
            _ = fsync(folder)
            close(folder)
        }
    }

    private func write(_ data: Data, to file: URL, durable: Bool) throws {
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
        guard !durable || fsync(fd) == 0 else { throw SyncStateFile.failure("fsync \(file.path)", errno) }
    }

    static func failure(_ what: String, _ code: Int32) -> NimbusError {
        NimbusError(.internalError, reason: "Saving the sync state failed (\(what): \(String(cString: strerror(code)))); "
            + "the change was not accepted.")
    }
}

/// Encodes the state with each outbox entry's JSON kept between saves, so that a save costs a
/// copy of the outbox, not an encoding of it (enqueues would otherwise grow quadratically).
final class OutboxEncodingCache: @unchecked Sendable {
    // Safe: used only by the engine's actor (or once, by a single caller).
    /// The entries encoded last time, in outbox order, identified by sequence (an entry keeps
    /// its sequence for life) and versioned by revision and attempts (an entry changes only with
    /// a new revision or attempt count: SyncEngine+Send).
    private var sequences: [Int64] = []
    private var versions: [(revision: Int64, attempts: Int)] = []
    private var pieces: [Data] = []
    /// The pieces joined with commas: what goes between `"outbox":[` and `]`.
    private var joined = Data()
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    func encode(_ state: SyncState) throws -> Data {
        var rest = state
        rest.outbox = []
        let skeleton = try encoder.encode(rest)
        let outbox = state.outbox
        if unchangedPrefix(of: outbox) {
            // Only appended since last time (every enqueue of new records): encode the new ones.
            for entry in outbox[sequences.count...] { try add(entry) }
        } else {
            // Removed or changed entries: rebuild, reusing every piece still current. Both lists
            // are in sequence order (the outbox keeps enqueue order).
            let (oldSequences, oldVersions, oldPieces) = (sequences, versions, pieces)
            sequences = []
            versions = []
            pieces = []
            joined = Data(capacity: joined.count)
            var old = 0
            for entry in outbox {
                while old < oldSequences.count && oldSequences[old] < entry.sequence { old += 1 }
                if old < oldSequences.count && oldSequences[old] == entry.sequence && oldVersions[old].revision == entry.revision
                    && oldVersions[old].attempts == entry.attempts {
                    add(entry, json: oldPieces[old])
                } else {
                    try add(entry)
                }
            }
        }
        // Keys are sorted and strings escape their quotes, so this is the one empty outbox.
        let empty = Data("\"outbox\":[]".utf8)
        guard let range = skeleton.range(of: empty) else { return try encoder.encode(state) }
        var data = Data(capacity: skeleton.count + joined.count + 2)
        data.append(skeleton[..<range.lowerBound])
        data.append(contentsOf: Array("\"outbox\":[".utf8))
        data.append(joined)
        data.append(UInt8(ascii: "]"))
        data.append(skeleton[range.upperBound...])
        return data
    }

    private func unchangedPrefix(of outbox: [OutboxEntry]) -> Bool {
        guard outbox.count >= sequences.count else { return false }
        for index in sequences.indices {
            let entry = outbox[index]
            if entry.sequence != sequences[index] || entry.revision != versions[index].revision
                || entry.attempts != versions[index].attempts {
                return false
            }
        }
        return true
    }

    private func add(_ entry: OutboxEntry) throws {
        add(entry, json: try encoder.encode(entry))
    }

    private func add(_ entry: OutboxEntry, json: Data) {
        if !pieces.isEmpty { joined.append(UInt8(ascii: ",")) }
        joined.append(json)
        sequences.append(entry.sequence)
        versions.append((entry.revision, entry.attempts))
        pieces.append(json)
    }
}

/// `write(2)`, named so that it does not collide with `Data.write`.
@inline(__always)
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
