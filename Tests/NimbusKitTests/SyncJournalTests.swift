import Foundation
import Testing
@testable import NimbusKit

/// The engine's state file as a journal: enqueue cost independent of the outbox's size, torn
/// entries dropped, compaction, and migration of the earlier one-document format. Offline: the
/// engine's server is a closed port (nothing here sends).
@Suite("SyncEngine journal")
struct SyncJournalTests {
    static func offlineEngine(_ url: URL, delegate: any SyncEngineDelegate) throws -> SyncEngine {
        let configuration = NimbusConfiguration(serverURL: URL(string: "http://127.0.0.1:9")!, token: "t")
        let database = Container(identifier: "iCloud.test.Journal", configuration: configuration).privateDatabase
        return try SyncEngine(database: database, stateURL: url, delegate: delegate)
    }

    static func change(_ n: Int) -> PendingChange {
        var record = Record(recordType: "Event", id: RecordID(recordName: String(format: "e-%06d", n)))
        record.set("title", "event \(n)")
        record.set("timestamp", Date(timeIntervalSince1970: Double(n)))
        return .save(record)
    }

    static func entry(_ n: Int) -> OutboxEntry {
        OutboxEntry(change: change(n), sequence: Int64(n + 1), revision: 1, enqueuedAt: Date(timeIntervalSince1970: 5),
                    attempts: 0, lastError: nil)
    }

    /// 10,000 single enqueues (NIMBUSKIT_ENQUEUES to change it): the bytes the engine writes per
    /// enqueue are the same for the last thousand as for the first (a whole-file rewrite grows
    /// with the outbox: ~150 KB per enqueue at 1,000 pending, ~3 MB at 10,000), and so, within a
    /// generous bound for this shared machine, is the time. The figures are printed.
    @Test func tenThousandSingleEnqueuesCostTheSameAtTheEndAsAtTheStart() async throws {
        let count = ProcessInfo.processInfo.environment["NIMBUSKIT_ENQUEUES"].flatMap(Int.init) ?? 10_000
        let window = count / 10
        let url = temporaryDirectory("journal").appendingPathComponent("sync.json")
        let replica = MemoryReplica()
        let engine = try Self.offlineEngine(url, delegate: replica)
        var bytes: [Int64] = []
        var seconds: [Double] = []
        for n in 0..<count {
            let before = await engine.stateBytesWritten
            let start = Date()
            try await engine.enqueue(Self.change(n))
            seconds.append(Date().timeIntervalSince(start))
            bytes.append(await engine.stateBytesWritten - before)
        }
        #expect(await engine.status.pendingCount == count)
        let firstBytes = Double(bytes.prefix(window).reduce(0, +)) / Double(window)
        let lastBytes = Double(bytes.suffix(window).reduce(0, +)) / Double(window)
        let firstTime = seconds.prefix(window).reduce(0, +) / Double(window)
        let lastTime = seconds.suffix(window).reduce(0, +) / Double(window)
        print("journal: \(count) single enqueues; first \(window): \(Int(firstBytes)) B and \(Int(firstTime * 1e6)) µs per enqueue; "
            + "last \(window): \(Int(lastBytes)) B and \(Int(lastTime * 1e6)) µs per enqueue")
        #expect(lastBytes <= firstBytes * 1.1 + 16, "bytes per enqueue grew from \(firstBytes) to \(lastBytes)")
        #expect(lastBytes < 1024, "\(lastBytes) bytes written per enqueue of a small record")
        // Each enqueue waits for one fdatasync (1–5 ms here, varying with the other jobs on the disk):
        // the bound is loose, the bytes above are the exact check. A whole-file rewrite at 10,000
        // pending takes tens of ms per enqueue.
        #expect(lastTime <= firstTime * 5 + 0.010, "an enqueue took \(firstTime) s at first and \(lastTime) s at the end")
        let reopened = try Self.offlineEngine(url, delegate: replica)
        #expect(await reopened.status.pendingCount == count)
        #expect(await reopened.pendingChanges.last == Self.change(count - 1))
    }

    @Test func crc32MatchesTheCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
    }

    /// A crash mid-append leaves part of the last entry: whatever length of it survives, opening
    /// drops it and keeps every entry before it, and appending goes on after them.
    @Test func aTornOrDamagedLastEntryIsDroppedAndEverythingBeforeItKept() throws {
        let directory = temporaryDirectory("torn")
        let url = directory.appendingPathComponent("sync.json")
        var (journal, state) = try SyncJournal.open(url)
        for n in 0..<3 {
            state.outbox.append(Self.entry(n))
            state.nextSequence = Int64(n + 2)
            try journal.commit(&state, durable: true)
        }
        let twoEntries = try Data(contentsOf: url)
        state.outbox.append(Self.entry(3))
        state.nextSequence = 5
        state.zoneTokens["Work"] = SyncToken("t")
        try journal.commit(&state, durable: true)
        let whole = try Data(contentsOf: url)
        #expect(try SyncJournal.open(url).1 == state)
        var damaged = whole
        damaged[whole.count - 3] ^= 0x40
        var cuts = Array(twoEntries.count..<whole.count).map { whole.prefix($0) }
        cuts.append(damaged)
        for (index, bytes) in cuts.enumerated() {
            let copy = directory.appendingPathComponent("cut-\(index).json")
            try bytes.write(to: copy)
            var (reopened, read) = try SyncJournal.open(copy)
            #expect(read.outbox.map(\.sequence) == [1, 2, 3], "cut at \(bytes.count) of \(whole.count)")
            #expect(read.zoneTokens.isEmpty)
            #expect(reopened.droppedTailBytes == bytes.count - twoEntries.count)
            read.outbox.append(Self.entry(9))
            try reopened.commit(&read, durable: true)
            #expect(try SyncJournal.open(copy).1.outbox.map(\.sequence) == [1, 2, 3, 10])
        }
        // Damage before the last entry is not a torn tail: what follows is dropped too, never misread.
        var early = whole
        early[JournalFormat.magic.count + JournalFormat.entryHeaderSize + 2] ^= 0x01
        try early.write(to: url)
        #expect(try SyncJournal.open(url).1.outbox.isEmpty)
    }

    /// Changes of the same records grow the file; past `compactionFactor` times the live state it
    /// is rewritten as one entry, and reads back the same.
    @Test func editsOfTheSameRecordsAreCompacted() throws {
        let url = temporaryDirectory("compact").appendingPathComponent("sync.json")
        var (journal, state) = try SyncJournal.open(url)
        journal.compactionFloor = 16 * 1024
        for n in 0..<10 { state.outbox.append(Self.entry(n)) }
        state.nextSequence = 11
        try journal.commit(&state, durable: false)
        for round in 0..<300 {
            let index = round % 10
            state.outbox[index].revision += 1
            if round % 7 == 0 { state.zoneTokens["z"] = SyncToken("token-\(round)") }
            try journal.commit(&state, durable: false)
            // Each background compaction ends before the next commit: among 1,000 parallel tests
            // its thread once ran so late that only 2 compactions happened in 300 commits.
            journal.waitForCompaction()
        }
        state.outbox.remove(state.outbox[0].recordID)
        try journal.commit(&state, durable: true)
        journal.waitForCompaction()
        #expect(journal.compactions >= 3, "\(journal.compactions) compactions")
        let size = try Data(contentsOf: url).count
        #expect(size <= 4 * 16 * 1024 + 4096, "the journal is \(size) bytes")
        #expect(try SyncJournal.open(url).1 == state)
    }

    /// A state file of the earlier format (one JSON document) is read once and rewritten as a
    /// journal holding the same state; an unreadable one is an error that says what to do.
    @Test func anEarlierStateFileIsMigrated() throws {
        let url = temporaryDirectory("migrate").appendingPathComponent("sync.json")
        var old = SyncState()
        old.outbox = [Self.entry(0), Self.entry(1)]
        old.nextSequence = 3
        old.zoneTokens["Work"] = SyncToken("t")
        old.zones = ["_defaultZone", "Work"]
        old.failed = [FailedChange(change: Self.change(7), cause: .init(code: .invalidArguments, reason: "r"),
                                   failedAt: Date(timeIntervalSince1970: 9))]
        try JSONEncoder().encode(old).write(to: url)
        #expect(try SyncJournal.open(url).1 == old)
        #expect(try Data(contentsOf: url).starts(with: JournalFormat.magic))
        #expect(try SyncJournal.open(url).1 == old)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
        #expect(leftovers == ["sync.json"])
        try Data("{not json".utf8).write(to: url)
        #expect(throws: NimbusError.self) { try SyncJournal.open(url) }
    }
}
