import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// A device's push registration as `GET /devices` shows it, with the latest outcome in the
/// delivery log when there is one.
package struct PushRegistrationSummary: Sendable, Hashable {
    package var container: String
    package var environment: Environment
    package var apnsEnvironment: Environment
    package var registeredAt: Int64
    package var lastAttemptAt: Int64?
    package var lastStatus: Int?
    package var lastReason: String?
}

/// Push registrations (docs/push.md "Registrations and the outbox"): a device token's APNs token
/// per container and environment. They die with their device token: revocation removes them
/// (`removeRegistrations`) and the outbox joins live tokens only.
package struct PushRegistrationStore: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded
}

extension PushRegistrationStore {
    /// Binds `request`'s APNs token to the session's device token, container and environment,
    /// replacing the device's earlier registration there and taking the APNs token from any other
    /// device token that had it. AUTHENTICATION_FAILED when the token was revoked meanwhile.
    package func register(_ session: Session, _ request: PushRegistrationRequest) async throws {
        let now = clock.nowMilliseconds()
        let registered = try await pool.withTransaction { connection -> Bool in
            // Orders this registration against a revocation of the token (its UPDATE waits for
            // this share lock, then removes what this transaction adds) and finds it revoked if
            // the revocation came first.
            guard try connection.queryFirst("""
                SELECT 1 FROM device_tokens WHERE token_id = \(session.tokenID) AND revoked_at IS NULL FOR SHARE
                """, decode: { _ in true }) != nil else { return false }
            // Two devices registering one APNs token at once: the second waits here, then moves it.
            try connection.run("""
                SELECT pg_advisory_xact_lock(hashtextextended(\(session.container + "\u{1}" + session.environment.rawValue + "\u{1}" + request.apnsToken), 29))
                """)
            try connection.run("""
                DELETE FROM push_registrations
                WHERE container = \(session.container) AND environment = \(session.environment.rawValue)
                  AND apns_token = \(request.apnsToken) AND device_token_id <> \(session.tokenID)
                """)
            try connection.run("""
                INSERT INTO push_registrations (user_id, device_token_id, container, environment, apns_environment, apns_token, registered_at)
                VALUES (\(session.userID), \(session.tokenID), \(session.container), \(session.environment.rawValue),
                        \(request.apnsEnvironment.rawValue), \(request.apnsToken), \(PushSQL.time(now)))
                ON CONFLICT (device_token_id, container, environment) DO UPDATE SET
                    apns_environment = excluded.apns_environment, apns_token = excluded.apns_token, registered_at = excluded.registered_at
                """)
            return true
        }
        guard registered else { throw SyncError(.authenticationFailed, "The bearer token is unknown or revoked.") }
    }

    /// Removes the session's device registration in its container and environment (and the pushes
    /// queued for it); false when there was none.
    package func unregister(_ session: Session) async throws -> Bool {
        try await pool.withConnection { connection in
            try connection.run("""
                DELETE FROM push_registrations
                WHERE device_token_id = \(session.tokenID) AND container = \(session.container)
                  AND environment = \(session.environment.rawValue)
                """) > 0
        }
    }

    /// The registrations of the user's live device tokens, by token id, each with the newest
    /// entry of its delivery log.
    package func registrations(userID: Int64) async throws -> [String: [PushRegistrationSummary]] {
        let rows = try await pool.query("""
            SELECT r.device_token_id, r.container, r.environment, r.apns_environment, r.registered_at, l.at, l.status, l.reason
            FROM push_registrations r
            JOIN device_tokens t ON t.token_id = r.device_token_id AND t.revoked_at IS NULL
            LEFT JOIN LATERAL (
                SELECT at, status, reason FROM push_log g
                WHERE g.device_token_id = r.device_token_id AND g.container = r.container AND g.environment = r.environment
                  AND g.outcome NOT IN ('long-poll', 'expired-queued', 'revoked')
                ORDER BY g.at DESC, g.id DESC LIMIT 1
            ) l ON true
            WHERE r.user_id = \(userID)
            ORDER BY r.container, r.environment
            """) { row -> (String, PushRegistrationSummary) in
            (try row.string(0), PushRegistrationSummary(
                container: try row.string(1), environment: Environment(rawValue: try row.string(2)) ?? .development,
                apnsEnvironment: Environment(rawValue: try row.string(3)) ?? .development,
                registeredAt: try row.milliseconds(4), lastAttemptAt: try row.optionalMilliseconds(5),
                lastStatus: try row.optionalInt64(6).map { Int($0) }, lastReason: try row.optionalString(7)))
        }
        return Dictionary(grouping: rows, by: \.0).mapValues { $0.map(\.1) }
    }

    /// Removes every registration of the device tokens `tokenIDs` (revocation; its own statement,
    /// so that it sees registrations that committed while the revocation waited for their lock).
    static func removeRegistrations(_ connection: PGConnection, tokenIDs: [String]) throws {
        guard !tokenIDs.isEmpty else { return }
        try connection.run("DELETE FROM push_registrations WHERE device_token_id = ANY(\(PGData.textArray(tokenIDs)))")
    }
}
