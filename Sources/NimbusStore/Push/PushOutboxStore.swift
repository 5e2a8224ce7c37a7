import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// A push claimed for sending: everything the sender needs, and the lease that makes its outcome
/// count only while the push is still its own.
package struct ClaimedPush: Sendable, Hashable {
    package var outboxID: Int64
    /// The attempt this claim is (1 for the first): the lease. An outcome recorded with a stale
    /// lease (the lease ran out and another sender claimed the push) changes nothing but the log.
    package var attempt: Int
    package var kind: PushKind
    /// `apns-id`: the same for every attempt.
    package var apnsID: String
    /// `apns-collapse-id` of a background push (the zone).
    package var collapseKey: String?
    /// `apns-expiration`, milliseconds since 1970.
    package var expiresAt: Int64
    package var registrationID: Int64
    package var apnsEnvironment: Environment
    /// Lower-case hex.
    package var apnsToken: String
    /// The bundle id configured for the container (`apns-topic`).
    package var topic: String
    package var userID: Int64
    package var deviceTokenID: String
    package var container: String
    package var environment: Environment
    package var notificationID: String
    /// The webcourier notification object, exactly as a long-poll returns it.
    package var notification: JSONValue
    /// The channel position just past this notification (the payload's `cursor`).
    package var cursor: String
    package var longPollFirst: Bool
    /// The subscription's `shouldBadge` (false when the subscription is gone: a `firesOnce` one).
    package var badge: Bool = false
}

/// The outbox's sending side (docs/push.md "Registrations and the outbox"): senders on every
/// instance claim due pushes with `FOR UPDATE SKIP LOCKED`, and record each attempt's outcome,
/// which the delivery log keeps.
package struct PushOutboxStore: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded

    /// How long a claim lasts: a sender that has not recorded an outcome by then is presumed gone,
    /// and the push is due again (with the same `apns-id`).
    package static let leaseMillis: Int64 = 60_000
}

extension PushOutboxStore {
    /// How long past its wait a parked long-poll's mark lasts (`longPollParked`).
    package static let longPollMarginMillis: Int64 = 5_000

    /// Long-poll first across instances: device token `session.tokenID` parks a long-poll of at
    /// most `waitSeconds` on this instance. Its registration in the session's container and
    /// environment, if it has one, is marked parked until then plus `longPollMarginMillis`, so a
    /// write on any instance holds its pushes for the grace (`PushOutbox.enqueue`). One statement
    /// on an unlogged table (no WAL, no flush at commit); nothing for a device without a
    /// registration. The mark is not cleared when the poll ends: a device that does not poll again
    /// meanwhile gets its pushes after the grace instead of at once.
    package func longPollParked(_ session: Session, waitSeconds: Int, now: Int64? = nil) async throws {
        let until = (now ?? clock.nowMilliseconds()) + Int64(max(waitSeconds, 0)) * 1_000 + Self.longPollMarginMillis
        _ = try await pool.withConnection { connection in
            try connection.run("""
                INSERT INTO push_long_polls (registration_id, until)
                SELECT r.id, \(PushSQL.time(until)) FROM push_registrations r
                WHERE r.user_id = \(session.userID) AND r.container = \(session.container)
                  AND r.environment = \(session.environment.rawValue) AND r.device_token_id = \(session.tokenID)
                ON CONFLICT (registration_id) DO UPDATE SET until = greatest(push_long_polls.until, excluded.until)
                """)
        }
    }

    /// Long-poll first: device token `tokenID` polled `session`'s channel naming a cursor at
    /// `sequence`. Its pushes waiting out the grace for notifications up to there are dropped and
    /// logged as delivered by the long-poll. Returns how many.
    @discardableResult
    package func deliveredByLongPoll(_ session: Session, upTo sequence: Int64, now: Int64? = nil) async throws -> Int {
        let now = now ?? clock.nowMilliseconds()
        let skipped = try await pool.withConnection { connection in
            try connection.queryFirst("""
                WITH dropped AS (
                    DELETE FROM push_outbox o USING push_registrations r
                    WHERE r.device_token_id = \(session.tokenID) AND r.container = \(session.container)
                      AND r.environment = \(session.environment.rawValue) AND o.registration_id = r.id
                      AND o.database_id = \(session.databaseID) AND o.notification_seq <= \(sequence)
                      AND o.long_poll_first AND o.state = 'queued' AND o.attempts = 0
                    RETURNING r.user_id, r.device_token_id, r.container, r.environment, o.notification_id, o.push_type
                ), logged AS (
                    INSERT INTO push_log (at, user_id, device_token_id, container, environment, notification_id, push_type,
                                          outcome, attempts, by_long_poll)
                    SELECT \(PushSQL.time(now)), user_id, device_token_id, container, environment, notification_id, push_type,
                           'long-poll', 0, true
                    FROM dropped
                    RETURNING 1
                )
                SELECT count(*) FROM logged
                """) { try $0.int(0) } ?? 0
        }
        database.pushCounters.skippedByLongPoll(skipped)
        return skipped
    }

    /// Pushes waiting in the outbox and the oldest one's creation time (metrics, the console).
    package func queueDepth() async throws -> (count: Int, oldestCreatedAt: Int64?) {
        try await pool.queryFirst("SELECT count(*), min(created_at) FROM push_outbox") { row in
            (try row.int(0), try row.optionalMilliseconds(1))
        } ?? (0, nil)
    }

    /// When the next push falls due (a queued push's time, or a claim's lease running out), or nil
    /// when the outbox is empty: the sender sleeps until then unless a notification wakes it.
    package func earliestDueAt() async throws -> Int64? {
        try await pool.queryFirst("SELECT min(due_at) FROM push_outbox") { try $0.optionalMilliseconds(0) } ?? nil
    }
}
