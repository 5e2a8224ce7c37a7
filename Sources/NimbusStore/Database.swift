import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// What every store shares: the connection pool, the signing key, the clock, the parked
/// long-polls and the announcements to other instances, and the write caches.
package final class Database: Sendable {
    /// The pool as it is: `PGError`s come out unmapped (the write strategies retry on some).
    /// Stores reach it through `StorePool`, which maps errors at their boundary.
    let rawPool: PGPool
    /// Signs change tokens and continuation markers with the server secret.
    package let signer: TokenSigner
    let clock: any WallClock
    let tokenUse = TokenUseRecorder()
    /// Parked long-poll requests, woken by local commits and by NOTIFY from other instances.
    package let hub: ChangeHub
    /// Tells the other instances about committed changes (NOTIFY after the commit).
    let announcer: Announcer
    /// Whether a parked long-poll's token is still live, checked before it delivers.
    let liveTokens: LiveTokens
    /// Where devices last synced each zone (the console's lag), written every few seconds.
    let syncPositions: SyncPositionRecorder
    /// What the write fast path takes on trust and checks inside its one statement.
    let caches = WriteCaches()
    /// Shares statements and commits among concurrent create-only writes.
    let createCombiner: WriteCombiner<PlannedCreates, CreateOutcome>
    /// Push mode and topics: with push off no registration is stored and no push is queued.
    package let push: PushSettings
    /// Pushes queued, sent, failed and skipped since start (`/metrics`).
    package let pushCounters = PushCounters()

    /// A database over `pool` as it is (tests that need no database use a pool that never
    /// connects); servers use `Store.open`, which loads the signing key.
    package init(pool: PGPool, signer: TokenSigner, clock: any WallClock, hub: ChangeHub,
                 writeBatchesInFlight: Int = Store.defaultWriteBatchesInFlight, push: PushSettings = PushSettings()) {
        rawPool = pool
        self.push = push
        createCombiner = FastCreate.makeCombiner(pool: pool, batchesInFlight: writeBatchesInFlight)
        self.signer = signer
        self.clock = clock
        self.hub = hub
        announcer = Announcer(pool: pool)
        liveTokens = LiveTokens(pool: pool)
        syncPositions = SyncPositionRecorder(pool: pool)
    }

    /// Committed changes: wakes this instance's parked requests now and the other instances'
    /// through NOTIFY, sent after the commit (see `Announcer`).
    func announce(_ events: [ChangeEvent]) {
        for event in events { hub.publish(event) }
        announcer.announce(events)
    }
}

/// A store: a view of the shared `Database` that owns one aggregate's SQL. The other stores it
/// calls are given to it in its initializer (wired by `Store`; docs/architecture.md "The store's
/// rooms"), never reached through here.
///
/// Its statements run as its `execution` says: `.offloaded` unless whoever asked for the store
/// stated otherwise (`store.records.on(.onLoop(loop))` from a request's task on its loop).
package protocol DatabaseBacked: Sendable {
    var database: Database { get }
    var execution: Execution { get set }
}

extension DatabaseBacked {
    /// This store, and the stores it calls, with their statements run as `execution` says.
    package func on(_ execution: Execution) -> Self {
        var store = self
        store.execution = execution
        return store
    }

    /// The pool, with database errors mapped to domain errors where they leave the store.
    var pool: StorePool { StorePool(pool: database.rawPool, execution: execution) }
    var signer: TokenSigner { database.signer }
    var clock: any WallClock { database.clock }
    var hub: ChangeHub { database.hub }
    var caches: WriteCaches { database.caches }
    var tokenUse: TokenUseRecorder { database.tokenUse }
    func announce(_ events: [ChangeEvent]) { database.announce(events) }
}
