import Foundation
import Testing
@testable import NimbusKit

/// The engine asks for the next page of a zone while it decodes, opens and applies this one
/// (`ChangesContinuation`), and writes each page's token without syncing it (the zone's last token
/// is synced). What the app sees must not change: every record once, in the server's order, the
/// token never ahead of what the delegate applied, and nothing left unsynced when a fetch returns.
@Suite("The pipelined fetch against the real server")
struct FetchPipelineTests {
    /// Pages of 5 records: 23 records are 5 pages.
    static func serverWithSmallPages() throws -> TestServer { try TestServer.start(["--max-results-limit", "5"]) }

    @Test func everyRecordArrivesOnceInOrderAndTheStateIsSyncedWhenTheFetchReturns() async throws {
        let server = try Self.serverWithSmallPages()
        defer { server.stop() }
        let writer = try Device.make(server, token: try server.device(user: "pipe", device: "mac"))
        let names = (0..<23).map { String(format: "item-%02d", $0) }
        for name in names { try await writer.save(event(name, name: name)) }
        #expect(try await writer.flush())

        let reader = PageReplica(failOnPage: nil)
        let database = server.container(token: try server.device(user: "pipe", device: "phone"), cache: temporaryDirectory("assets")).privateDatabase
        let engine = try SyncEngine(database: database, stateURL: temporaryDirectory("state").appendingPathComponent("sync.json"), delegate: reader)
        try await engine.fetchChanges()
        #expect(reader.pages.count == 5, "pages of 5: \(reader.pages.map(\.count))")
        #expect(reader.pages.flatMap { $0 } == names, "once each, in the server's order")
        #expect(await engine.stateUnsynced == false, "the fetch returned with the journal synced")
    }

    @Test func aDelegateThatFailsOnThePageThreeLeavesTheTokenAfterPageTwoAndARelaunchGoesOnFromThere() async throws {
        let server = try Self.serverWithSmallPages()
        defer { server.stop() }
        let writer = try Device.make(server, token: try server.device(user: "pipe2", device: "mac"))
        let names = (0..<23).map { String(format: "item-%02d", $0) }
        for name in names { try await writer.save(event(name, name: name)) }
        #expect(try await writer.flush())

        let database = server.container(token: try server.device(user: "pipe2", device: "phone"), cache: temporaryDirectory("assets")).privateDatabase
        let stateURL = temporaryDirectory("state").appendingPathComponent("sync.json")
        let failing = PageReplica(failOnPage: 3)
        do {
            let engine = try SyncEngine(database: database, stateURL: stateURL, delegate: failing)
            await #expect(throws: PageReplica.Refused.self) { try await engine.fetchChanges() }
            #expect(failing.pages.flatMap { $0 } == Array(names.prefix(10)), "pages 1 and 2 applied, page 3 refused")
        }
        // A new engine on the same state file (the process was relaunched): pages 1 and 2 are not
        // fetched again, page 3 (the refused one) is.
        let replica = PageReplica(failOnPage: nil)
        let relaunched = try SyncEngine(database: database, stateURL: stateURL, delegate: replica)
        try await relaunched.fetchChanges()
        #expect(replica.pages.flatMap { $0 } == Array(names.dropFirst(10)))
    }

    /// In process (`PagedChanges`): the delegate refuses page 2 while page 3 is fetched ahead. The
    /// token stays after page 1, page 3 is never applied, its request is cancelled when the fetch
    /// throws, and a relaunch asks from page 1's token.
    @Test func aDelegateThatFailsOnPageTwoLeavesTheTokenAfterPageOneAndCancelsThePageFetchedAhead() async throws {
        let source = PagedChanges(pages: 5)
        source.hold(2)  // page 3's request (0-based 2) runs until cancelled
        let zone = ZoneID("paged")
        let database = source.database()
        let stateURL = temporaryDirectory("state").appendingPathComponent("sync.json")
        let failing = PageReplica(failOnPage: 2)
        do {
            let engine = try SyncEngine(database: database, stateURL: stateURL, delegate: failing)
            await #expect(throws: PageReplica.Refused.self) { try await engine.fetchChanges(in: [zone]) }
            #expect(failing.pages == [source.names(0)], "page 1 applied, page 2 refused, page 3 never applied")
            #expect(await engine.state.zoneTokens[zone.zoneName] == SyncToken("t1"))
        }
        #expect(try await eventually(5) { source.snapshot.running == 0 }, "no request left running: \(source.snapshot)")
        #expect(!source.snapshot.finished.contains("t2"), "page 3 was not fetched whole: \(source.snapshot)")
        source.release(2)
        let asked = source.snapshot.asked.count
        let replica = PageReplica(failOnPage: nil)
        let relaunched = try SyncEngine(database: database, stateURL: stateURL, delegate: replica)
        try await relaunched.fetchChanges(in: [zone])
        #expect(source.snapshot.asked.dropFirst(asked).first == "t1")
        #expect(replica.pages == (1..<5).map { source.names($0) })
    }
}

/// A delegate that keeps each applied page's record names and refuses page `failOnPage` (1-based).
final class PageReplica: SyncEngineDelegate, @unchecked Sendable {
    struct Refused: Error {}
    // Safe: `applied` is only touched under `lock`.
    private let lock = NSLock()
    private var applied: [[String]] = []
    private var calls = 0
    let failOnPage: Int?

    init(failOnPage: Int?) { self.failOnPage = failOnPage }

    var pages: [[String]] { lock.withLock { applied } }

    func syncEngine(_ engine: SyncEngine, apply changes: FetchedChanges) async throws {
        try lock.withLock {
            calls += 1
            if calls == failOnPage { throw Refused() }
            if !changes.modified.isEmpty { applied.append(changes.modified.map(\.recordName)) }
        }
    }
}
