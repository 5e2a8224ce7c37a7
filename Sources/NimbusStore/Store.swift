import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The sync domain on PostgreSQL: one shared `Database` and a store per aggregate. All SQL of
/// the service lives in this module; handlers take only the stores they use.
package struct Store: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded

    package init(database: Database) {
        self.database = database
    }

    /// A store over `pool` as it is (tests that need no database use a pool that never connects);
    /// servers use `open`, which loads the signing key.
    package init(pool: PGPool, signer: TokenSigner, clock: any WallClock, hub: ChangeHub,
                 writeBatchesInFlight: Int = Store.defaultWriteBatchesInFlight, push: PushSettings = PushSettings()) {
        database = Database(pool: pool, signer: signer, clock: clock, hub: hub, writeBatchesInFlight: writeBatchesInFlight, push: push)
    }

    /// Opens the store: loads the server secret, creating it at first start.
    package static func open(pool: PGPool, clock: any WallClock = SystemClock(), hubCapacity: ChangeHub.Capacity = .init(),
                             writeBatchesInFlight: Int = Store.defaultWriteBatchesInFlight,
                             push: PushSettings = PushSettings()) async throws -> Store {
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
                     writeBatchesInFlight: writeBatchesInFlight, push: push)
    }

    // The one place stores are wired to the stores they call (docs/architecture.md "The
    // store's rooms"); each is a small value over the shared `database`, made when asked for.
    package var accounts: AccountStore { AccountStore(database: database, execution: execution) }
    package var devices: DeviceStore { DeviceStore(database: database, execution: execution) }
    package var zones: ZoneStore { ZoneStore(database: database, execution: execution) }
    package var schemas: SchemaStore { SchemaStore(database: database, execution: execution) }
    package var assets: AssetStore { AssetStore(database: database, execution: execution) }
    package var subscriptions: SubscriptionStore { SubscriptionStore(database: database, execution: execution) }
    package var notifications: NotificationStore { NotificationStore(database: database, execution: execution) }
    package var records: RecordStore { RecordStore(database: database, execution: execution, accounts: accounts, schemas: schemas, assets: assets) }
    package var pruner: Pruner { Pruner(database: database, execution: execution, records: records, assets: assets) }
    package var pushRegistrations: PushRegistrationStore { PushRegistrationStore(database: database, execution: execution) }
    package var pushOutbox: PushOutboxStore { PushOutboxStore(database: database, execution: execution) }
    /// The operators' views of push: the delivery log, registrations, the queue.
    package var pushReport: PushReport { PushReport(database: database, execution: execution) }
    /// Pushes queued, sent, failed and skipped since start (`/metrics`; the sender counts its sends).
    package var pushCounters: PushCounters { database.pushCounters }
    package var statistics: StatisticsStore { StatisticsStore(database: database, execution: execution) }
    package var admin: AdminStore {
        AdminStore(database: database, execution: execution, accounts: accounts, devices: devices, schemas: schemas, records: records, assets: assets)
    }
    package var exports: UserExport { UserExport(database: database, execution: execution, schemas: schemas, subscriptions: subscriptions, assets: assets) }
    package var imports: UserImport {
        UserImport(database: database, execution: execution, accounts: accounts, zones: zones, schemas: schemas, records: records, assets: assets,
                   subscriptions: subscriptions)
    }
    /// Parked long-polls (woken by commits here and by NOTIFY from other instances).
    package var hub: ChangeHub { database.hub }
    /// Signs change tokens and continuation markers.
    package var signer: TokenSigner { database.signer }

    /// Waits until every change announced so far has been sent to the other instances (before a
    /// command-line tool exits or the server closes its pool).
    package func flushAnnouncements() async {
        await database.announcer.flush()
    }

    /// Announces every zone and database as changed and waits until that is sent: after a tool
    /// replaced the data under running servers (`nimbus restore`), their parked requests re-read.
    package func announceEverything() async throws {
        let events = try await pool.withConnection { connection in
            let zones = try connection.query("SELECT database_id, id, change_seq FROM zones") { row in
                ChangeEvent(databaseID: try row.int64(0), kind: .records, zoneID: try row.int64(1), sequence: try row.int64(2))
            }
            let databases = try connection.query("SELECT id, notification_seq FROM databases") { row in
                [ChangeEvent(databaseID: try row.int64(0), kind: .zones),
                 ChangeEvent(databaseID: try row.int64(0), kind: .notifications, sequence: try row.int64(1))]
            }
            return zones + databases.flatMap { $0 }
        }
        database.announce(events)
        await flushAnnouncements()
    }

    /// Whether a parked long-poll's device token is still live (checked before it delivers).
    package var liveTokens: LiveTokens { database.liveTokens }

    /// LISTENs for changes committed by any instance and wakes this instance's parked requests,
    /// and for revoked tokens, whose parked requests it answers. After a reconnect every parked
    /// request re-reads and revoked tokens are looked up: notices may have been missed.
    package func startListening(url: String) -> PGListener {
        let hub = database.hub, store = self
        let listener = PGListener(url: url, channels: [ChangeEvent.channel, ChangeHub.revocationChannel], onNotification: { notification in
            if notification.channel == ChangeHub.revocationChannel {
                hub.revoke(tokenID: notification.payload)
            } else if let event = ChangeEvent(payload: notification.payload) {
                hub.publish(event)
            }
        }, onConnect: { isReconnect in
            guard isReconnect else { return }
            hub.wakeAll()
            Task {
                do { try await store.answerMissedRevocations() } catch {
                    Logger(subsystem: "hub").warning("could not look up revocations missed while LISTEN was down", ["error": "\(error)"])
                }
            }
        })
        listener.start()
        return listener
    }

    /// The migrations applied to the database, in order (the console's configuration page).
    package func appliedMigrations() async throws -> [(version: Int64, name: String)] {
        try await pool.withConnection { connection in
            try connection.query("SELECT version, name FROM schema_migrations ORDER BY version") { row in (try row.int64(0), try row.string(1)) }
        }
    }

    /// One round trip to the database; returns its duration in seconds.
    package func ping() async throws -> Double {
        try await probe().seconds
    }

    /// One round trip to the database: its duration in seconds and which server answered
    /// (address, port, primary or standby; behind deploy/ha/'s HAProxy it changes with a failover).
    package func probe() async throws -> DatabaseProbe {
        let start = monotonicNanoseconds()
        let server = try await pool.withConnection { try $0.server() }
        return DatabaseProbe(seconds: Double(monotonicNanoseconds() - start) / 1e9, host: server.host, isPrimary: server.isPrimary)
    }

    /// Connections in use and idle, waiting requests and the maximum, for metrics.
    package var poolStatistics: PoolStatistics {
        let statistics = database.rawPool.statistics
        return PoolStatistics(inUse: statistics.inUse, idle: statistics.idle, max: statistics.max, waiting: statistics.waiting)
    }
}

extension PushOutboxStore {
    /// The outbox's one store it calls (claimed pushes carry the notification feed's cursor).
    var notifications: NotificationStore { NotificationStore(database: database, execution: execution) }
}

/// A round trip to the database and the server that answered it, without PostgreSQL's types.
package struct DatabaseProbe: Sendable, Hashable {
    package var seconds: Double
    /// `127.0.0.1:5433`, or `local socket`.
    package var host: String
    /// False on a standby: writes fail there until the failover ends.
    package var isPrimary: Bool
    package var role: String { isPrimary ? "primary" : "standby" }
}

/// The connection pool's gauges, without the pool's type (the API does not see PostgreSQL).
package struct PoolStatistics: Sendable, Hashable {
    package var inUse: Int
    package var idle: Int
    package var max: Int
    package var waiting: Int
}
