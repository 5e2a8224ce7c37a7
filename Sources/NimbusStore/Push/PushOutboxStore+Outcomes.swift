import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

extension PushOutboxStore {
    /// Records what became of attempt `push.attempt` of `push` at `now` and returns the decision
    /// (`PushRetryPolicy`): delivered, given up or expired pushes leave the outbox; a retry is due
    /// again at its time; a dead APNs token loses its registration (when it still is the token
    /// registered) and every push queued for it. Every outcome goes to the delivery log. With a
    /// stale lease only the log changes.
    @discardableResult
    package func recordOutcome(_ push: ClaimedPush, answer: PushAnswer, now: Int64? = nil) async throws -> PushDecision {
        try await recordOutcomes([(push, answer)], now: now)[0]
    }

    /// `recordOutcome` for many attempts in one transaction of at most five statements, whatever
    /// their number (the sender records the answers that arrived while the previous batch was being
    /// recorded): one commit per batch instead of one per push. Returns the decisions in order.
    @discardableResult
    package func recordOutcomes(_ outcomes: [(push: ClaimedPush, answer: PushAnswer)], now: Int64? = nil) async throws -> [PushDecision] {
        guard !outcomes.isEmpty else { return [] }
        let now = now ?? clock.nowMilliseconds()
        let decisions = outcomes.map { PushRetryPolicy.decide($0.answer, attempts: $0.push.attempt, now: now, expiresAt: $0.push.expiresAt) }
        var ended: [ClaimedPush] = [], retrying: [(push: ClaimedPush, at: Int64)] = [], dying: [ClaimedPush] = []
        for (outcome, decision) in zip(outcomes, decisions) {
            switch decision {
            case .delivered, .giveUp, .expired: ended.append(outcome.push)
            case .retry(let at): retrying.append((outcome.push, at))
            case .removeRegistration: dying.append(outcome.push)
            }
        }
        let done = ended, retries = retrying, dead = dying
        let log = zip(outcomes, decisions).map { outcome, decision in (outcome.push, outcome.answer, Self.logOutcome(decision)) }
        try await pool.withTransaction { connection in
            // Each change only while the claim is still the sender's (`attempts` is the lease).
            if !done.isEmpty {
                try connection.run("""
                    DELETE FROM push_outbox o USING unnest(\(PGData.int64Array(done.map(\.outboxID))),
                                                           \(PGData.int64Array(done.map { Int64($0.attempt) }))) AS u(id, attempts)
                    WHERE o.id = u.id AND o.attempts = u.attempts
                    """)
            }
            if !retries.isEmpty {
                try connection.run("""
                    UPDATE push_outbox o SET state = 'queued', due_at = \(PushSQL.time(0)) + u.due * interval '1 millisecond'
                    FROM unnest(\(PGData.int64Array(retries.map(\.push.outboxID))), \(PGData.int64Array(retries.map { Int64($0.push.attempt) })),
                                \(PGData.int64Array(retries.map(\.at)))) AS u(id, attempts, due)
                    WHERE o.id = u.id AND o.attempts = u.attempts
                    """)
            }
            if !dead.isEmpty {
                try connection.run("""
                    DELETE FROM push_registrations r USING unnest(\(PGData.int64Array(dead.map(\.registrationID))),
                                                                  \(PGData.textArray(dead.map(\.apnsToken)))) AS u(id, token)
                    WHERE r.id = u.id AND r.apns_token = u.token
                    """)
            }
            // No status (no answer) travels as -1, no reason as ''.
            try connection.run("""
                INSERT INTO push_log (at, user_id, device_token_id, container, environment, notification_id, push_type, outcome,
                                      status, reason, attempts)
                SELECT \(PushSQL.time(now)), u.user_id, u.device, u.container, u.environment, u.nid::uuid, u.kind, u.outcome,
                       NULLIF(u.status, -1), NULLIF(u.reason, ''), u.attempts
                FROM unnest(\(PGData.int64Array(log.map(\.0.userID))), \(PGData.textArray(log.map(\.0.deviceTokenID))),
                            \(PGData.textArray(log.map(\.0.container))), \(PGData.textArray(log.map(\.0.environment.rawValue))),
                            \(PGData.textArray(log.map(\.0.notificationID))), \(PGData.textArray(log.map(\.0.kind.rawValue))),
                            \(PGData.textArray(log.map(\.2))), \(PGData.int64Array(log.map { Int64($0.1.status ?? -1) })),
                            \(PGData.textArray(log.map { $0.1.reason ?? "" })), \(PGData.int64Array(log.map { Int64($0.0.attempt) })))
                     AS u(user_id, device, container, environment, nid, kind, outcome, status, reason, attempts)
                """)
        }
        return decisions
    }

    /// Hands claimed pushes that were never sent back to the outbox as they were before their claim
    /// (queued, due at `now`, the attempt not counted): the sender stopped before they got a send
    /// slot. Only rows still under these claims' leases change.
    package func releaseClaims(_ pushes: [ClaimedPush], now: Int64? = nil) async throws {
        guard !pushes.isEmpty else { return }
        let now = now ?? clock.nowMilliseconds()
        _ = try await pool.withConnection { connection in
            try connection.run("""
                UPDATE push_outbox o SET state = 'queued', attempts = o.attempts - 1, due_at = \(PushSQL.time(now))
                FROM unnest(\(PGData.int64Array(pushes.map(\.outboxID))), \(PGData.int64Array(pushes.map { Int64($0.attempt) })))
                     AS u(id, attempts)
                WHERE o.id = u.id AND o.attempts = u.attempts
                """)
        }
    }

    /// The delivery log's `outcome` for a decision.
    private static func logOutcome(_ decision: PushDecision) -> String {
        switch decision {
        case .delivered: "delivered"
        case .giveUp: "failed"
        case .expired: "expired"
        case .retry: "retry"
        case .removeRegistration: "removed"
        }
    }
}
