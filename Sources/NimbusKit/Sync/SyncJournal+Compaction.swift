import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Rewriting the journal as one entry: at once when it is created or migrated, and in the
/// background when it has grown past `compactionFactor` times the live state. A background
/// compaction encodes a snapshot of the state on another thread into a temp file (fsync'd); the
/// first commit after it finished appends to that file the entries written since the snapshot
/// (they apply over it: every item sets a record's entry or a part whole), fsyncs it, renames it
/// over the journal and fsyncs the folder. A crash at any instant leaves the old journal or the
/// new one, whole; an abandoned temp file is removed at the next open.
extension SyncJournal {
    /// Rewrites the file as one entry holding `state`, now.
    func rewrite(_ state: SyncState) throws {
        let file = try Self.snapshot(state, sizes: self)
        let temporary = try Self.writeTemporary(file, beside: url)
        try Self.install(temporary, at: url)
        bytesWritten += Int64(file.count)
        compactions += 1
        unsynced = false
        saved = SavedParts(state)
        try openForAppending(truncatingTo: file.count)
    }

    /// Starts encoding `state` into a temp file on a background thread.
    func startCompaction(of state: SyncState) {
        let job = CompactionJob(offset: size)
        let url = self.url
        compaction = job
        DispatchQueue.global(qos: .utility).async {
            job.finish(Result {
                let file = try SyncJournal.snapshot(state, sizes: nil)
                return (try SyncJournal.writeTemporary(file, beside: url), file.count)
            })
        }
    }

    /// Installs a finished background compaction; a failed one is dropped (the next commit past
    /// the threshold starts another).
    func finishCompactionIfDone() {
        guard let job = compaction, let outcome = job.outcome else { return }
        compaction = nil
        guard case .success(let (temporary, length)) = outcome else { return }
        do {
            let tail = try readTail(from: job.offset)
            let out = posixOpen(temporary.path, O_WRONLY | O_APPEND, 0)
            guard out >= 0 else { throw Self.failure("open \(temporary.path)", errno) }
            defer { close(out) }
            try Self.writeAll(tail, to: out, path: temporary.path)
            guard fsync(out) == 0 else { throw Self.failure("fsync \(temporary.path)", errno) }
            try Self.install(temporary, at: url)
            bytesWritten += Int64(length + tail.count)
            compactions += 1
            unsynced = false
            try openForAppending(truncatingTo: length + tail.count)
        } catch {
            unlink(temporary.path)
        }
    }

    /// Waits for a background compaction and installs it (tests).
    func waitForCompaction() {
        while let job = compaction, job.outcome == nil { usleep(1_000) }
        finishCompactionIfDone()
    }

    /// Removes temp files of compactions a crash or exit abandoned.
    func removeAbandonedTemporaries() {
        let directory = url.deletingLastPathComponent()
        let prefix = ".\(url.lastPathComponent)."
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where name.hasPrefix(prefix) && name.hasSuffix(".tmp") {
            unlink(directory.appendingPathComponent(name).path)
        }
    }

    private func readTail(from offset: Int) throws -> Data {
        guard size > offset else { return Data() }
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        let tail = try handle.read(upToCount: size - offset) ?? Data()
        guard tail.count == size - offset else { throw Self.failure("read \(url.path)", EIO) }
        return tail
    }

    /// A journal file holding `state` as one entry. With `sizes`, that journal's record of live
    /// item sizes is reset to the snapshot's.
    static func snapshot(_ state: SyncState, sizes journal: SyncJournal?) throws -> Data {
        let encoder = JSONEncoder()
        var payload = Data()
        if let journal {
            journal.putSizes = [:]
            journal.partSizes = [:]
            journal.liveBytes = 0
        }
        for entry in state.outbox {
            let json = try encoder.encode(entry)
            JournalFormat.append(.put, json, to: &payload)
            journal?.notePut(entry.recordID, size: JournalFormat.itemHeaderSize + json.count)
        }
        var parts: [(JournalFormat.Kind, Data)] = [
            (.tokens, try encoder.encode(state.tokens)), (.notifications, try encoder.encode(state.notifications)),
            (.failed, try encoder.encode(state.failed)), (.sequence, try encoder.encode(state.nextSequence)),
        ]
        for (zone, names) in state.knownRecords.sorted(by: { $0.key < $1.key }) {
            let delta = KnownDelta(zone: zone, added: names.sorted(), removed: [], whole: true)
            JournalFormat.append(.known, try encoder.encode(delta), to: &payload)
            journal?.liveBytes += delta.liveBytes
        }
        // Only when there are zone changes: a journal without them stays readable by earlier NimbusKits.
        if !state.zoneChanges.isEmpty { parts.append((.zones, try encoder.encode(state.zoneChanges))) }
        for (kind, json) in parts {
            JournalFormat.append(kind, json, to: &payload)
            journal?.notePart(kind, size: JournalFormat.itemHeaderSize + json.count)
        }
        var file = Data(JournalFormat.magic)
        file.append(JournalFormat.entry(payload))
        return file
    }

    /// Writes `data` to a new temp file beside `url`, fsync'd.
    static func writeTemporary(_ data: Data, beside url: URL) throws -> URL {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        let out = posixOpen(temporary.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard out >= 0 else { throw failure("open \(temporary.path)", errno) }
        do {
            try writeAll(data, to: out, path: temporary.path)
            guard fsync(out) == 0 else { throw failure("fsync \(temporary.path)", errno) }
            close(out)
        } catch {
            close(out)
            unlink(temporary.path)
            throw error
        }
        return temporary
    }

    /// Renames `temporary` over `url`; durable once the folder's entry is on disk.
    static func install(_ temporary: URL, at url: URL) throws {
        guard rename(temporary.path, url.path) == 0 else {
            let code = errno
            unlink(temporary.path)
            throw failure("rename to \(url.path)", code)
        }
        let folder = posixOpen(url.deletingLastPathComponent().path, O_RDONLY, 0)
        if folder >= 0 {
            _ = fsync(folder)
            close(folder)
        }
    }
}

/// A background compaction: where the journal ended when its snapshot was taken, and, once the
/// snapshot is written, its temp file and length.
final class CompactionJob: Sendable {
    let offset: Int
    private let result = Locked<Result<(URL, Int), any Error>?>(nil)

    init(offset: Int) { self.offset = offset }

    var outcome: Result<(URL, Int), any Error>? { result.withLock { $0 } }

    func finish(_ outcome: Result<(URL, Int), any Error>) { result.withLock { $0 = outcome } }
}
