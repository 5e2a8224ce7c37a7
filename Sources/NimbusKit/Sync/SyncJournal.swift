import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The engine's state on disk as an append-only journal (format: `JournalFormat`). A commit
/// appends one entry holding only what changed since the last one (the outbox entries touched,
/// the tokens if they moved) and, when durable, one `fdatasync`: an enqueue costs the same with
/// 10 or 10,000 changes pending. When the file has grown to `compactionFactor` times the live
/// state it is rewritten in the background (SyncJournal+Compaction): a snapshot goes to a temp
/// file, and a later commit adds the entries appended meanwhile and renames it over the journal,
/// so at any instant the path holds a whole journal. A state file of the earlier format (one JSON
/// document) is migrated the same way on first open.
///
/// Not thread-safe: the engine's actor owns it.
final class SyncJournal {
    let url: URL
    /// Rewrite when the file exceeds this many times the live state (and `compactionFloor`).
    var compactionFactor = 4
    var compactionFloor = 256 * 1024
    /// Bytes appended or rewritten since open (tests and bench/client.sh read it).
    var bytesWritten: Int64 = 0
    var compactions = 0
    /// The last commit removed outbox entries or changed the parked ones (asset links may be free).
    private(set) var lastCommitDroppedChanges = false
    /// Bytes of a torn or damaged tail dropped when the file was opened.
    private(set) var droppedTailBytes = 0

    var fd: Int32 = -1
    /// Bytes in the file (entries whole; a failed append is cut off).
    var size = 0
    /// Bytes of each record's latest `put` item and of the latest other items: the live state.
    var putSizes: [RecordID: Int] = [:]
    var liveBytes = 0
    var partSizes: [JournalFormat.Kind: Int] = [:]
    /// What the file holds of the parts written whole (compared at commit to skip unchanged ones).
    /// Never the outbox: a copy held here would make the engine's next change copy it whole.
    var saved = SavedParts()
    var unsynced = false
    let encoder = JSONEncoder()
    /// The compaction running in the background, if any (SyncJournal+Compaction).
    var compaction: CompactionJob?

    private init(url: URL) { self.url = url }

    deinit {
        if fd >= 0 { close(fd) }
        // A compaction still running finishes into a temp file the next open removes.
    }

    /// Opens the journal at `url` (creating it, or migrating a state file of the earlier format)
    /// and returns the state it holds. A torn last entry is dropped (the file is cut before it).
    static func open(_ url: URL) throws -> (SyncJournal, SyncState) {
        let journal = SyncJournal(url: url)
        let state = try journal.load()
        return (journal, state)
    }

    private func load() throws -> SyncState {
        removeAbandonedTemporaries()
        let data = FileManager.default.fileExists(atPath: url.path) ? try Data(contentsOf: url) : Data()
        if data.isEmpty {
            try rewrite(SyncState())
            return SyncState()
        }
        if data.starts(with: JournalFormat.magic) {
            let (payloads, validLength) = JournalFormat.entries(in: data)
            var state = SyncState()
            for payload in payloads {
                do { try replay(payload, into: &state) } catch { throw unreadable(error) }
            }
            droppedTailBytes = data.count - validLength
            try openForAppending(truncatingTo: validLength)
            saved = SavedParts(state)
            state.outbox.markSaved()
            if size > compactionFloor && size > compactionFactor * liveBytes { try rewrite(state) }
            return state
        }
        // The earlier format: one JSON document, replaced whole at every save.
        var state: SyncState
        do { state = try JSONDecoder().decode(SyncState.self, from: data) } catch { throw unreadable(error) }
        state.outbox.markSaved()
        try rewrite(state)
        return state
    }

    private func unreadable(_ error: any Error) -> NimbusError {
        NimbusError(.invalidArguments, reason: "The sync state file \(url.path) cannot be read (\(error)); "
            + "move it away to start over (pending changes in it would be lost).")
    }

    private func replay(_ payload: Data, into state: inout SyncState) throws {
        let decoder = JSONDecoder()
        for item in try JournalFormat.items(in: payload) {
            let itemSize = JournalFormat.itemHeaderSize + item.json.count
            switch item.kind {
            case .put:
                let entry = try decoder.decode(OutboxEntry.self, from: item.json)
                state.outbox.append(entry)
                state.nextSequence = max(state.nextSequence, entry.sequence + 1)
                notePut(entry.recordID, size: itemSize)
            case .remove:
                let id = try decoder.decode(RecordID.self, from: item.json)
                state.outbox.remove(id)
                noteRemove(id)
            case .tokens:
                state.tokens = try decoder.decode(SyncState.Tokens.self, from: item.json)
            case .notifications:
                state.notifications = try decoder.decode(SyncState.Notifications.self, from: item.json)
            case .failed:
                state.failed = try decoder.decode([FailedChange].self, from: item.json)
            case .sequence:
                state.nextSequence = max(state.nextSequence, try decoder.decode(Int64.self, from: item.json))
            case .known:
                let delta = try decoder.decode(KnownDelta.self, from: item.json)
                if delta.whole == true { liveBytes -= (state.knownRecords[delta.zone] ?? []).reduce(0) { $0 + $1.utf8.count + 3 } }
                delta.apply(to: &state.knownRecords)
                liveBytes = max(0, liveBytes + delta.liveBytes)
            case .zones:
                state.zoneChanges = try decoder.decode(SyncState.ZoneChanges.self, from: item.json)
                for entry in state.zoneChanges.pending { state.nextSequence = max(state.nextSequence, entry.sequence + 1) }
            }
            if item.kind != .put && item.kind != .remove && item.kind != .known { notePart(item.kind, size: itemSize) }
        }
    }

    // MARK: - Commits

    /// Appends what changed in `state` since the last commit as one entry; `durable` adds the
    /// `fdatasync` that makes it (and every entry before it) survive a power cut. On failure
    /// the file is cut back to where it was and nothing in `state` is marked saved.
    func commit(_ state: inout SyncState, durable: Bool) throws {
        var payload = Data()
        var puts: [(RecordID, Int)] = []
        var removes: [RecordID] = []
        let dirty = state.outbox.dirty
        if !dirty.isEmpty {
            let present = dirty.compactMap { state.outbox.entry(for: $0) }.sorted { $0.sequence < $1.sequence }
            for entry in present {
                let json = try encoder.encode(entry)
                JournalFormat.append(.put, json, to: &payload)
                puts.append((entry.recordID, JournalFormat.itemHeaderSize + json.count))
            }
            for id in dirty where state.outbox.index(of: id) == nil {
                JournalFormat.append(.remove, try encoder.encode(id), to: &payload)
                removes.append(id)
            }
        }
        var parts: [(JournalFormat.Kind, Int)] = []
        func part<Part: Encodable & Equatable>(_ kind: JournalFormat.Kind, _ now: Part, _ before: Part) throws {
            guard now != before else { return }
            let json = try encoder.encode(now)
            JournalFormat.append(kind, json, to: &payload)
            parts.append((kind, JournalFormat.itemHeaderSize + json.count))
        }
        try part(.tokens, state.tokens, saved.tokens)
        try part(.notifications, state.notifications, saved.notifications)
        try part(.failed, state.failed, saved.failed)
        try part(.zones, state.zoneChanges, saved.zoneChanges)
        var knownBytes = 0
        for delta in state.knownDeltas {
            JournalFormat.append(.known, try encoder.encode(delta), to: &payload)
            knownBytes += delta.liveBytes
        }

        let start = size
        do {
            if !payload.isEmpty {
                try append(JournalFormat.entry(payload))
                unsynced = true
            }
            if durable && unsynced {
                try sync()
                unsynced = false
            }
        } catch {
            // Not accepted: the entry must not surface after a restart either.
            if size != start && ftruncate(fd, off_t(start)) == 0 { size = start }
            throw error
        }
        lastCommitDroppedChanges = !removes.isEmpty || parts.contains { $0.0 == .failed }
        for (id, size) in puts { notePut(id, size: size) }
        for id in removes { noteRemove(id) }
        for (kind, size) in parts { notePart(kind, size: size) }
        liveBytes = max(0, liveBytes + knownBytes)
        state.knownDeltas = []
        state.outbox.markSaved()
        saved = SavedParts(state)
        finishCompactionIfDone()
        if compaction == nil && size > compactionFloor && size > compactionFactor * liveBytes { startCompaction(of: state) }
    }

    // MARK: - Files

    func openForAppending(truncatingTo length: Int) throws {
        if fd >= 0 { close(fd) }
        fd = posixOpen(url.path, O_WRONLY | O_APPEND, 0)
        guard fd >= 0 else { throw Self.failure("open \(url.path)", errno) }
        var info = stat()
        if fstat(fd, &info) == 0 && Int(info.st_size) != length {
            guard ftruncate(fd, off_t(length)) == 0 else { throw Self.failure("truncate \(url.path)", errno) }
        }
        size = length
    }

    private func append(_ data: Data) throws {
        do {
            try Self.writeAll(data, to: fd, path: url.path)
        } catch {
            // A partial entry would fail its checksum on reading, but later entries must not follow it.
            _ = ftruncate(fd, off_t(size))
            throw error
        }
        size += data.count
        bytesWritten += Int64(data.count)
    }

    private func sync() throws {
        #if canImport(Glibc)
        let result = fdatasync(fd)
        #else
        let result = fsync(fd)
        #endif
        guard result == 0 else { throw Self.failure("fsync \(url.path)", errno) }
    }

    func notePut(_ id: RecordID, size: Int) {
        liveBytes += size - (putSizes.updateValue(size, forKey: id) ?? 0)
    }

    func noteRemove(_ id: RecordID) {
        liveBytes -= putSizes.removeValue(forKey: id) ?? 0
    }

    func notePart(_ kind: JournalFormat.Kind, size: Int) {
        liveBytes += size - (partSizes.updateValue(size, forKey: kind) ?? 0)
    }

    static func writeAll(_ data: Data, to fd: Int32, path: String) throws {
        try data.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = posixWrite(fd, base + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw failure("write \(path)", errno)
                }
                offset += written
            }
        }
    }

    static func failure(_ what: String, _ code: Int32) -> NimbusError {
        NimbusError(.internalError, reason: "Saving the sync state failed (\(what): \(String(cString: strerror(code)))); "
            + "the change was not accepted.")
    }
}

/// The parts of the state a commit writes whole when they changed.
struct SavedParts {
    var tokens = SyncState().tokens
    var notifications = SyncState().notifications
    var failed: [FailedChange] = []
    var zoneChanges = SyncState.ZoneChanges()

    init() {}

    init(_ state: SyncState) {
        tokens = state.tokens
        notifications = state.notifications
        failed = state.failed
        zoneChanges = state.zoneChanges
    }
}

/// `open(2)` and `write(2)`, named so that they do not collide with the journal's `open` and `Data.write`.
@inline(__always)
func posixOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }

@inline(__always)
func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(fd, buffer, count) }
