import Foundation
import Testing
@testable import NimbusKit
@testable import NimbusKitCK

/// A CKSyncEngine app's data: names → values per zone, and the events it got (Apple's API only).
actor Notes: CKSyncEngineDelegate {
    var values: [CKRecord.ID: String] = [:]
    var events: [String] = []
    var serialization: CKSyncEngine.State.Serialization?
    private(set) var engine: CKSyncEngine?

    static func make(database: CKDatabase, state: CKSyncEngine.State.Serialization) async -> (Notes, CKSyncEngine) {
        let notes = Notes()
        var configuration = CKSyncEngine.Configuration(database: database, stateSerialization: state, delegate: notes)
        configuration.automaticallySync = false
        let engine = CKSyncEngine(configuration)
        await notes.set(engine)
        await engine.state.flush()
        return (notes, engine)
    }

    private init() {}
    private func set(_ engine: CKSyncEngine) { self.engine = engine }

    func edit(_ name: String, in zone: CKRecordZone.ID, _ value: String?) {
        let id = CKRecord.ID(recordName: name, zoneID: zone)
        values[id] = value
        engine?.state.add(pendingRecordZoneChanges: [value == nil ? .deleteRecord(id) : .saveRecord(id)])
    }

    func names(in zone: CKRecordZone.ID? = nil) -> [String] {
        values.keys.filter { zone == nil || $0.zoneID == zone }.map(\.recordName).sorted()
    }

    func handleEvent(_ event: CKSyncEngine.Event, syncEngine: CKSyncEngine) async {
        switch event {
        case .stateUpdate(let update): serialization = update.stateSerialization
        case .fetchedRecordZoneChanges(let changes):
            for modification in changes.modifications { values[modification.record.recordID] = modification.record["value"] as? String }
            for deletion in changes.deletions { values[deletion.recordID] = nil }
        case .fetchedDatabaseChanges(let changes):
            for deletion in changes.deletions { values = values.filter { $0.key.zoneID != deletion.zoneID } }
        case .sentDatabaseChanges(let sent):
            events.append("zones saved \(sent.savedZones.map(\.zoneID.zoneName).sorted()) deleted \(sent.deletedZoneIDs.map(\.zoneName))")
        case .sentRecordZoneChanges(let sent):
            events.append("records saved \(sent.savedRecords.map(\.recordID.recordName).sorted())")
        default: break
        }
    }

    func nextRecordZoneChangeBatch(_ context: CKSyncEngine.SendChangesContext, syncEngine: CKSyncEngine) async
        -> CKSyncEngine.RecordZoneChangeBatch? {
        let changes = syncEngine.state.pendingRecordZoneChanges.filter { context.options.scope.contains($0) }
        let snapshot = values
        return await CKSyncEngine.RecordZoneChangeBatch(pendingChanges: changes) { id in
            guard let value = snapshot[id] else { return nil }
            let record = CKRecord(recordType: "Note", recordID: id)
            record["value"] = value
            return record
        }
    }
}

/// CKSyncEngine on NimbusKit's engine against the real server: zone changes in the journal,
/// fetch and send scopes, an expired change token, an unreadable state.
@Suite("CKSyncEngine against the server", .serialized)
struct CKSyncEngineTests {
    static func database(_ server: LiveServer, _ device: String, user: String) throws -> CKDatabase {
        CKContainer(identifier: LiveServer.container, configuration: try server.configuration(user: user, device: device)).privateCloudDatabase
    }

    static func freshState() -> CKSyncEngine.State.Serialization {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ckse-\(UUID().uuidString)")
        return CKSyncEngine.State.Serialization(journalPath: directory.appendingPathComponent("engine.journal").path)
    }

    static func serverNames(_ database: CKDatabase, zone: CKRecordZone.ID) async throws -> [String] {
        var names: Set<String> = []
        var token: SyncToken?
        while true {
            let page = try await database.nimbusDatabase().changes(in: zone.nimbus, since: token, resultsLimit: 400)
            for record in page.modified { names.insert(record.id.recordName) }
            for deleted in page.deleted { names.remove(deleted.id.recordName) }
            token = page.syncToken
            if !page.moreComing { break }
        }
        return names.sorted()
    }

    /// Zone changes go into NimbusKit's journal: a second engine on the same serialization (a
    /// relaunch after kill -9) has them; a zones file of the earlier NimbusKitCK is moved in.
    @Test func pendingZoneChangesAreInTheJournalAndTheEarlierFileIsMigrated() async throws {
        let server = try LiveServer.start()
        defer { server.stop() }
        let database = try Self.database(server, "mac", user: "zj")
        let state = Self.freshState()
        let (_, engine) = await Notes.make(database: database, state: state)
        engine.state.add(pendingDatabaseChanges: [.saveZone(CKRecordZone(zoneName: "A")), .deleteZone(CKRecordZone.ID(zoneName: "B"))])
        await engine.state.flush()
        #expect(await engine.nimbusEngine?.pendingZoneChanges == [.save(ZoneID("A")), .delete(ZoneID("B"))])

        let (_, relaunched) = await Notes.make(database: database, state: state)
        #expect(relaunched.state.pendingDatabaseChanges.map(\.zoneID.zoneName) == ["A", "B"])

        let old = Self.freshState()
        try FileManager.default.createDirectory(at: old.journalURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(#"[{"delete":false,"zoneName":"C"}]"#.utf8).write(to: old.zonesURL)
        let (_, migrated) = await Notes.make(database: database, state: old)
        #expect(await migrated.nimbusEngine?.pendingZoneChanges == [.save(ZoneID("C"))])
        #expect(!FileManager.default.fileExists(atPath: old.zonesURL.path))
        try await migrated.sendChanges()
        #expect(try await database.allRecordZones().map(\.zoneID.zoneName).contains("C"))
    }

    /// `SendChangesOptions.scope` and `FetchChangesOptions.scope` limit what goes and comes.
    @Test func sendAndFetchScopesAreHonoured() async throws {
        let server = try LiveServer.start()
        defer { server.stop() }
        let (mac, macEngine) = await Notes.make(database: try Self.database(server, "mac", user: "sc"), state: Self.freshState())
        let (phone, phoneEngine) = await Notes.make(database: try Self.database(server, "phone", user: "sc"), state: Self.freshState())
        let (a, b) = (CKRecordZone.ID(zoneName: "A"), CKRecordZone.ID(zoneName: "B"))
        macEngine.state.add(pendingDatabaseChanges: [.saveZone(CKRecordZone(zoneID: a)), .saveZone(CKRecordZone(zoneID: b))])
        for name in ["x", "y"] {
            await mac.edit(name, in: a, "1")
            await mac.edit(name, in: b, "1")
        }
        try await macEngine.sendChanges(.init(scope: .zoneIDs([a])))
        #expect(try await Self.serverNames(macEngine.database, zone: a) == ["x", "y"])
        #expect(macEngine.state.pendingRecordZoneChanges.map(\.recordID.zoneID) == [b, b], "zone B's changes wait")
        #expect(macEngine.state.pendingDatabaseChanges.map(\.zoneID) == [b])
        try await macEngine.sendChanges(.init(scope: .recordIDs([CKRecord.ID(recordName: "y", zoneID: b)])))
        #expect(macEngine.state.pendingRecordZoneChanges == [.saveRecord(CKRecord.ID(recordName: "x", zoneID: b))])
        try await macEngine.sendChanges(.init(scope: .allExcluding([b])))
        #expect(macEngine.state.pendingRecordZoneChanges.count == 1)
        try await macEngine.sendChanges()
        #expect(macEngine.state.pendingRecordZoneChanges.isEmpty)
        let events = await mac.events
        #expect(events.first == "zones saved [\"A\"] deleted []", "\(events)")

        try await phoneEngine.fetchChanges(.init(scope: .zoneIDs([b])))
        #expect(await phone.names(in: a).isEmpty)
        #expect(await phone.names(in: b) == ["x", "y"])
        try await phoneEngine.fetchChanges(.init(scope: .allExcluding([b])))
        #expect(await phone.names(in: a) == ["x", "y"])
    }

    /// The server expires a change token (tombstones pruned): the engine refetches the zone and
    /// the app ends with what the server has, deletions included.
    @Test func anExpiredChangeTokenIsRefetchedAndTheAppConverges() async throws {
        let server = try LiveServer.start()
        defer { server.stop() }
        let (mac, macEngine) = await Notes.make(database: try Self.database(server, "mac", user: "te"), state: Self.freshState())
        let (phone, phoneEngine) = await Notes.make(database: try Self.database(server, "phone", user: "te"), state: Self.freshState())
        let zone = CKRecordZone.ID(zoneName: "Notes")
        macEngine.state.add(pendingDatabaseChanges: [.saveZone(CKRecordZone(zoneID: zone))])
        for n in 0..<10 { await mac.edit("n\(n)", in: zone, "v") }
        try await macEngine.sendChanges()
        try await phoneEngine.fetchChanges()
        #expect(await phone.names().count == 10)
        for n in 0..<4 { await mac.edit("n\(n)", in: zone, nil) }
        await mac.edit("new", in: zone, "v")
        try await macEngine.sendChanges()
        try LiveServer.run(server.binary, ["prune", "--tombstones-older-than", "0s", "--database-url", server.databaseURL])

        try await phoneEngine.fetchChanges()
        let onServer = try await Self.serverNames(macEngine.database, zone: zone)
        #expect(onServer.count == 7)
        #expect(await phone.names() == onServer)
        try await phoneEngine.fetchChanges()
        #expect(await phone.names() == onServer)
    }

    /// A state that cannot be opened does not stop the program: the engine starts empty, moves
    /// the file aside, says why, and hands the app its new serialization.
    @Test func anUnreadableStateStartsEmptyInsteadOfCrashing() async throws {
        let server = try LiveServer.start()
        defer { server.stop() }
        let state = Self.freshState()
        try FileManager.default.createDirectory(at: state.journalURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("{not a journal".utf8).write(to: state.journalURL)
        let (notes, engine) = await Notes.make(database: try Self.database(server, "mac", user: "ur"), state: state)
        #expect(engine.stateOpenError != nil)
        #expect(engine.state.serialization.journalPath != state.journalPath)
        let directory = state.journalURL.deletingLastPathComponent().path
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).contains { $0.hasPrefix("engine.journal.unreadable-") })
        #expect(await notes.serialization?.journalPath == engine.state.serialization.journalPath)
        await notes.edit("a", in: .default, "1")
        try await engine.sendChanges()
        #expect(engine.state.pendingRecordZoneChanges.isEmpty)
    }
}
