import Foundation
import Testing
@testable import NimbusKit

/// Zone creates and deletes as engine changes, and per-zone scopes, against the real server.
@Suite("SyncEngine zone changes and scopes")
struct SyncEngineZoneTests {
    /// The order of what the engine reported sent, one line per answer.
    final class SendLog: SyncEngineDelegate, @unchecked Sendable {
        private let lock = Locked<[String]>([])
        let replica = MemoryReplica()
        var lines: [String] { lock.withLock { $0 } }

        func syncEngine(_ engine: SyncEngine, apply changes: FetchedChanges) async throws {
            try await replica.syncEngine(engine, apply: changes)
        }

        func syncEngine(_ engine: SyncEngine, didSend changes: SentChanges) async {
            lock.withLock { lines in
                for zone in changes.savedZones { lines.append("zone+ \(zone)") }
                for zone in changes.deletedZones { lines.append("zone- \(zone)") }
                for failed in changes.failedZones { lines.append("zone! \(failed.zoneID) \(failed.cause.code.rawValue)") }
                for record in changes.saved { lines.append("saved \(record.id.recordName)") }
                for id in changes.deleted { lines.append("deleted \(id.recordName)") }
            }
        }

        func syncEngine(_ engine: SyncEngine, localRecordIDsIn zone: ZoneID) async -> Set<RecordID> {
            await replica.syncEngine(engine, localRecordIDsIn: zone)
        }
    }

    static func engine(_ url: URL?, state: URL, token: String, delegate: any SyncEngineDelegate, server: TestServer) throws -> SyncEngine {
        let database = server.container(token: token, url: url, cache: temporaryDirectory("assets")).privateDatabase
        return try SyncEngine(database: database, stateURL: state, delegate: delegate, retryBackoff: Backoff(base: 0.05, cap: 1))
    }

    static let offline = URL(string: "http://127.0.0.1:9")

    /// A zone and records in it, queued while offline (the process then "relaunches": the
    /// journal is reopened), go in one `sendChanges`: the zone first, then the records.
    @Test func aZoneAndItsRecordsQueuedOfflineAreSentInOneRoundZoneFirst() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "zones", device: "mac")
        let state = temporaryDirectory("state").appendingPathComponent("sync.journal")
        let work = ZoneID("Work")
        let records = (0..<5).map { event("w\($0)", in: work, name: "w\($0)") }
        do {
            let log = SendLog()
            let engine = try Self.engine(Self.offline, state: state, token: token, delegate: log, server: server)
            try await engine.enqueueZoneSave(work)
            try await engine.enqueue(records.map { .save($0) })
            #expect(await engine.status.pendingCount == 6)
            let report = await engine.sendChanges()
            #expect(report.stoppedBy?.code == .networkFailure)
            #expect(report.left == 6 && report.savedZones.isEmpty && report.sent == 0)
        }
        let log = SendLog()
        let engine = try Self.engine(nil, state: state, token: token, delegate: log, server: server)
        #expect(await engine.pendingZoneChanges == [.save(work)], "the zone change survives the relaunch")
        let report = await engine.sendChanges()
        #expect(report.savedZones == [work])
        #expect(report.sent == 5 && report.left == 0 && report.stoppedBy == nil)
        #expect(log.lines.first == "zone+ Work", "sent in this order: \(log.lines)")
        #expect(log.lines.count == 6)
        let zones = try await engine.database.zones().map(\.zoneID)
        #expect(zones.contains(work))
        #expect(try await serverContents(engine.database, zone: work).count == 5)
        #expect(await engine.status.pendingCount == 0)
    }

    /// A zone the app uses but never created on the server (its records still queued) is not
    /// taken for a deleted one by a fetch: the app keeps its records, and the next send makes
    /// the zone and delivers them (before, the fetch told the app to delete them all).
    @Test func aZoneNeverCreatedOnTheServerIsNotTakenForADeletedOne() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "neverzone", device: "mac")
        let state = temporaryDirectory("state").appendingPathComponent("sync.journal")
        let history = ZoneID("History")
        let log = SendLog()
        let engine = try Self.engine(nil, state: state, token: token, delegate: log, server: server)
        let records = (0..<2).map { event("h\($0)", in: history, name: "h\($0)") }
        for record in records { log.replica.edit(record) }
        try await engine.enqueue(records.map { .save($0) })
        try await engine.fetchChanges()
        #expect(log.replica.snapshot.count == 2, "the fetch deleted the app's records of a zone not made yet")
        #expect(log.replica.tokenResets.isEmpty, "reported: \(log.replica.tokenResets.map(\.reason))")
        let report = await engine.sendChanges()
        #expect(report.sent == 2 && report.left == 0)
        #expect(try await serverContents(engine.database, zone: history).count == 2)
        try await engine.fetchChanges()
        #expect(log.replica.snapshot.count == 2)
    }

    /// A zone delete queued with record changes of that zone: the changes enqueued before the
    /// delete are dropped (the server deleted their records), the zone is emptied and made again
    /// by a save queued after the delete, and the record enqueued after that reaches it.
    @Test func aZoneDeleteDropsTheRecordChangesQueuedBeforeItAndKeepsTheLaterOnes() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "zonedel", device: "mac")
        let log = SendLog()
        let engine = try Self.engine(nil, state: temporaryDirectory("state").appendingPathComponent("s"), token: token,
                                     delegate: log, server: server)
        let work = ZoneID("Work")
        try await engine.enqueueZoneSave(work)
        try await engine.enqueue((0..<3).map { .save(event("old\($0)", in: work, name: "old\($0)")) })
        #expect(await engine.sendChanges().sent == 3)

        try await engine.enqueue(.save(event("edited", in: work, name: "old0")))   // before the delete: dropped
        try await engine.enqueue(.save(event("doomed", in: work, name: "doomed")))  // before the delete: dropped
        try await engine.enqueueZoneDelete(work)
        try await engine.enqueueZoneSave(work)
        try await engine.enqueue(.save(event("fresh", in: work, name: "fresh")))    // after: sent
        #expect(await engine.pendingZoneChanges == [.delete(work), .save(work)])
        let report = await engine.sendChanges()
        #expect(report.deletedZones == [work] && report.savedZones == [work])
        #expect(report.sent == 1 && report.left == 0)
        let names = Set(try await serverContents(engine.database, zone: work).keys.map(\.recordName))
        #expect(names == ["fresh"], "the server's Work zone holds \(names)")
        #expect(Array(log.lines.suffix(3)) == ["zone- Work", "zone+ Work", "saved fresh"], "\(log.lines)")
    }

    /// A zone change the server refuses is parked with its code; the rest is sent.
    @Test func aRefusedZoneChangeIsParkedWithItsCodeAndTheRestIsSent() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "zonepark", device: "mac")
        let log = SendLog()
        let engine = try Self.engine(nil, state: temporaryDirectory("state").appendingPathComponent("s"), token: token,
                                     delegate: log, server: server)
        try await engine.enqueue(zoneChanges: [.delete(.default), .save(ZoneID("Good"))])
        try await engine.enqueue(.save(event("g", in: ZoneID("Good"), name: "g")))
        let report = await engine.sendChanges()
        #expect(report.savedZones == [ZoneID("Good")])
        #expect(report.parkedZoneChanges.map(\.change) == [.delete(.default)])
        #expect(report.parkedZoneChanges.first?.cause.code == .invalidArguments)
        #expect(report.sent == 1 && report.left == 0)
        let status = await engine.status
        #expect(status.failedZoneChanges.count == 1 && status.pendingCount == 0)
        try await engine.discardFailed()
        #expect(await engine.status.failedZoneChanges.isEmpty)
    }

    /// `sendChanges(scope:)` sends only what its scope holds; `fetchChanges(scope: .allExcluding)`
    /// skips a zone and a later fetch still brings that zone's changes.
    @Test func scopesLimitWhatIsSentAndFetched() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let mac = try Device.make(server, token: try server.device(user: "scope", device: "mac"))
        let phone = try Device.make(server, token: try server.device(user: "scope", device: "phone"))
        let (a, b) = (ZoneID("A"), ZoneID("B"))
        try await mac.engine.enqueue(zoneChanges: [.save(a), .save(b)])
        for n in 0..<2 {
            try await mac.save(event("a\(n)", in: a, name: "a\(n)"))
            try await mac.save(event("b\(n)", in: b, name: "b\(n)"))
        }
        var report = await mac.engine.sendChanges(scope: .allExcluding([b]))
        #expect(report.savedZones == [a] && report.sent == 2 && report.left == 0)
        #expect(await mac.engine.status.pendingCount == 3)
        report = await mac.engine.sendChanges(scope: .records([RecordID(recordName: "b1", zoneID: b)]))
        #expect(report.savedZones == [b] && report.sent == 1)
        #expect(await mac.engine.pendingChanges.map(\.recordID.recordName) == ["b0"])
        #expect(await mac.engine.sendChanges().sent == 1)

        try await phone.engine.fetchChanges()
        #expect(phone.replica.snapshot.count == 4)
        try await mac.save(event("a2", in: a, name: "a2"))
        try await mac.save(event("b2", in: b, name: "b2"))
        #expect(await mac.engine.sendChanges().sent == 2)
        try await phone.engine.fetchChanges(scope: .allExcluding([b]))
        #expect(Set(phone.replica.snapshot.keys.map(\.recordName)) == ["a0", "a1", "b0", "b1", "a2"])
        try await phone.engine.fetchChanges()
        #expect(phone.replica.snapshot.count == 6, "b2 still arrives after a fetch that excluded its zone")
    }

    /// Zone changes are in the journal: a reopen (as after kill -9 between enqueue and send)
    /// has them, so does a compacted journal, and the enqueue waited for the disk.
    @Test func zoneChangesSurviveAReopenAndACompaction() async throws {
        let url = temporaryDirectory("zonejournal").appendingPathComponent("sync.journal")
        let replica = MemoryReplica()
        let changes: [PendingZoneChange] = [.save(ZoneID("A")), .delete(ZoneID("B")), .save(ZoneID("B"))]
        do {
            let engine = try SyncJournalTests.offlineEngine(url, delegate: replica)
            try await engine.enqueue(zoneChanges: [changes[0]])
            try await engine.enqueueZoneDelete(ZoneID("B"))
            try await engine.enqueueZoneSave(ZoneID("B"))
            try await engine.enqueue(SyncJournalTests.change(1))
        }
        let reopened = try SyncJournalTests.offlineEngine(url, delegate: replica)
        #expect(await reopened.pendingZoneChanges == changes)
        #expect(await reopened.status.pendingCount == 4)
        let (journal, opened) = try SyncJournal.open(url)
        #expect(opened.zoneChanges.pending.map(\.change) == changes)
        try journal.rewrite(opened)
        let state = try SyncJournal.open(url).1
        #expect(state.zoneChanges.pending.map(\.change) == changes, "a compacted journal keeps them")
        #expect(state.nextSequence > state.zoneChanges.pending.map(\.sequence).max() ?? 0)
    }

    /// The record IDs a tracking engine keeps (`tracksRecordIDs`, for token resets) are journal
    /// deltas: a reopen and a compaction give back the same sets, a zone's whole reset included.
    @Test func knownRecordIDsSurviveAReopenAndACompaction() throws {
        let url = temporaryDirectory("known").appendingPathComponent("sync.journal")
        let (journal, opened) = try SyncJournal.open(url)
        var state = opened
        state.knownRecords = ["A": ["a1", "a2"], "B": ["b1"]]
        state.knownDeltas = [KnownDelta(zone: "A", added: ["a1", "a2", "a3"], removed: ["a3"], whole: nil),
                             KnownDelta(zone: "B", added: ["b0"], removed: [], whole: nil),
                             KnownDelta(zone: "B", added: ["b1"], removed: [], whole: true)]
        try journal.commit(&state, durable: true)
        #expect(state.knownDeltas.isEmpty)
        let reopened = try SyncJournal.open(url)
        #expect(reopened.1.knownRecords == ["A": ["a1", "a2"], "B": ["b1"]])
        try reopened.0.rewrite(reopened.1)
        #expect(try SyncJournal.open(url).1.knownRecords == ["A": ["a1", "a2"], "B": ["b1"]])
    }
}
