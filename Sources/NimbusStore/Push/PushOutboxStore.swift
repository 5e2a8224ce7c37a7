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

    /// How long a claim lasts: a sender that has not recorded an outcome by then is presumed gone,
    /// and the push is due again (with the same `apns-id`).
    package static let leaseMillis: Int64 = 60_000
}

extension PushOutboxStore {
    /// Records what became of attempt `push.attempt` of `push` at `now` and returns the decision
    /// (`PushRetryPolicy`): delivered, given up or expired pushes leave the outbox; a retry is due
    /// again at its time; a dead APNs token loses its registration (when it still is the token
    /// registered) and every push queued for it. Every outcome goes to the delivery log. With a
    /// stale lease only the log changes.
    @discardableResult
    package func recordOutcome(_ push: ClaimedPush, answer: PushAnswer, now: Int64? = nil) async throws -> PushDecision {
        let now = now ?? clock.nowMilliseconds()
        let decision = PushRetryPolicy.decide(answer, attempts: push.attempt, now: now, expiresAt: push.expiresAt)
        let outcome: String
        let change: SQL
        let mine: SQL = "id = \(push.outboxID) AND attempts = \(Int64(push.attempt))"
        switch decision {
        case .delivered:
            outcome = "delivered"
            change = "DELETE FROM push_outbox WHERE \(mine)"
        case .giveUp:
            outcome = "failed"
            change = "DELETE FROM push_outbox WHERE \(mine)"
        case .expired:
            outcome = "expired"
            change = "DELETE FROM push_outbox WHERE \(mine)"
        case .retry(let at):
            outcome = "retry"
            change = "UPDATE push_outbox SET state = 'queued', due_at = \(PushSQL.time(at)) WHERE \(mine)"
        case .removeRegistration:
            outcome = "removed"
            change = """
                DELETE FROM push_registrations WHERE id = \(push.registrationID) AND apns_token = \(push.apnsToken)
                """
        }
        try await pool.withTransaction { connection in
            try connection.run(change)
            try connection.run("""
                INSERT INTO push_log (at, user_id, device_token_id, container, environment, notification_id, push_type, outcome,
                                      status, reason, attempts)
                VALUES (\(PushSQL.time(now)), \(push.userID), \(push.deviceTokenID), \(push.container), \(push.environment.rawValue),
                        \(push.notificationID)::uuid, \(push.kind.rawValue), \(outcome), \(answer.status.map(Int64.init)),
                        \(answer.reason), \(Int64(push.attempt)))
                """)
        }
        return decision
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
