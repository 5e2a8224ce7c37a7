import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The sync domain on PostgreSQL. All SQL of the service lives in this module.
package final class Store: Sendable {
    package let pool: PGPool
    /// Signs change tokens and continuation markers with the server secret.
    package let signer: TokenSigner
    let clock: any WallClock
    let tokenUse = TokenUseRecorder()
    /// Parked long-poll requests, woken by local commits and by NOTIFY from other instances.
    package let hub: ChangeHub
    /// Tells the other instances about committed changes (NOTIFY after the commit).
    let announcer: Announcer
    /// What the write fast path takes on trust and checks inside its one statement.
    let caches = WriteCaches()
    /// Shares statements and commits among concurrent create-only writes.
    let createCombiner: WriteCombiner<PlannedCreates, CreateOutcome>

    /// A store over `pool` as it is (tests that need no database use a pool that never connects);
    /// servers use `open`, which loads the signing key.
    package init(pool: PGPool, signer: TokenSigner, clock: any WallClock, hub: ChangeHub,
                 writeBatchesInFlight: Int = Store.defaultWriteBatchesInFlight) {
        self.pool = pool
        self.createCombiner = Self.makeCreateCombiner(pool: pool, batchesInFlight: writeBatchesInFlight)
        self.signer = signer
        self.clock = clock
        self.hub = hub
        self.announcer = Announcer(pool: pool)
    }

    /// Committed changes: wakes this instance's parked requests now and the other instances'
    /// through NOTIFY, sent after the commit (see `Announcer`).
    func announce(_ events: [ChangeEvent]) {
        for event in events { hub.publish(event) }
        announcer.announce(events)
    }

    /// Waits until every change announced so far has been sent to the other instances (before a
    /// command-line tool exits or the server closes its pool).
    package func flushAnnouncements() async {
        await announcer.flush()
    }

    /// Opens the store: loads the server secret, creating it at first start.
    package static func open(pool: PGPool, clock: any WallClock = SystemClock(), hubCapacity: ChangeHub.Capacity = .init(),
                             writeBatchesInFlight: Int = Store.defaultWriteBatchesInFlight) async throws -> Store {
        let key = try await pool.withConnection { connection in
            var random = SystemRandomNumberGenerator()
            let fresh = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &random) }
            try connection.run("""
                INSERT INTO server_secrets (name, secret) VALUES ('change-token', \(fresh))
                ON CONFLICT (name) DO NOTHING
                """)
            return try connection.queryFirst("SELECT secret FROM server_secrets WHERE name = 'change-token'") { try $0.bytes(0) } ?? fresh
        }
        return Store(pool: pool, signer: TokenSigner(key: key), clock: clock, hub: ChangeHub(capacity: hubCapacity),
                     writeBatchesInFlight: writeBatchesInFlight)
    }

    /// LISTENs for changes committed by any instance and wakes this instance's parked requests.
    /// After a reconnect every parked request re-reads: announcements may have been missed.
    package func startListening(url: String) -> PGListener {
        let hub = hub
        let listener = PGListener(url: url, channels: [ChangeEvent.channel], onNotification: { notification in
            if let event = ChangeEvent(payload: notification.payload) { hub.publish(event) }
        }, onConnect: { isReconnect in
            if isReconnect { hub.wakeAll() }
        })
        listener.start()
        return listener
    }

    /// One round trip to the database; returns its duration in seconds.
    package func ping() async throws -> Double {
        let start = monotonicNanoseconds()
        _ = try await pool.withConnection { connection in
            try connection.queryFirst("SELECT 1") { try $0.int(0) }
        }
        return Double(monotonicNanoseconds() - start) / 1e9
    }

    /// Connections in use and idle, for metrics.
    package var poolStatistics: PGPool.Statistics { pool.statistics }
}

/// Maps database errors that mean "bad input" or "try again" to domain errors.
extension PGError {
    var asSyncError: SyncError? {
        if isTransient { return SyncError(.tryAgainLater, "The database is unavailable right now; retry shortly.", retryAfter: 1) }
        if sqlState == PGError.SQLState.serializationFailure || sqlState == PGError.SQLState.deadlockDetected {
            return SyncError(.tryAgainLater, "The request collided with another change; retry it.", retryAfter: 1)
        }
        return nil
    }
}
