import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// One entry of the delivery log, as operators read it (`nimbus push log`, the console).
package struct PushLogEntry: Sendable, Hashable {
    package var at: Int64
    package var user: String
    package var deviceTokenID: String
    /// Nil when the device token no longer exists.
    package var deviceName: String?
    package var container: String
    package var environment: String
    package var notificationID: String
    package var pushType: String
    /// delivered, retry, removed, failed, expired, expired-queued, revoked, long-poll, no-topic, merged.
    package var outcome: String
    /// The APNs HTTP status; nil when there was no answer or no attempt.
    package var status: Int?
    package var reason: String?
    package var attempts: Int
    /// Delivered by the device's long-poll first: the push was dropped.
    package var byLongPoll: Bool
}

/// A registration as the console lists it: the APNs token shortened where it is read, so the
/// whole token never leaves the database on this path.
package struct PushRegistrationListing: Sendable, Hashable {
    package var user: String
    package var deviceTokenID: String
    package var deviceName: String
    package var container: String
    package var environment: String
    package var apnsEnvironment: String
    /// The APNs token's first `PushReport.shownTokenDigits` hex digits.
    package var apnsTokenStart: String
    package var registeredAt: Int64
    /// Pushes waiting in the outbox for it.
    package var queued: Int
    /// The newest entry of its delivery log (any outcome), if any.
    package var lastAt: Int64?
    package var lastOutcome: String?
    package var lastStatus: Int?
    package var lastReason: String?
}

/// The outbox as a whole.
package struct PushQueueSummary: Sendable, Hashable {
    /// Every push waiting: queued, held or being sent.
    package var depth: Int
    /// Of those, claimed by a sender now.
    package var sending: Int
    /// When the oldest waiting push was queued.
    package var oldestCreatedAt: Int64?
    /// The store's clock when this was read (the age is counted from it).
    package var now: Int64

    /// How long the oldest waiting push has waited, 0 when none is.
    package var oldestAgeMillis: Int64 { oldestCreatedAt.map { max(0, now - $0) } ?? 0 }
}

/// Whose delivery log to read.
package enum PushLogScope: Sendable, Hashable {
    case everyone
    case user(String)
    case deviceToken(String)
}

/// The operators' read-only views of push (docs/push.md "For operators"): the delivery log, the
/// registrations with their last outcome, and the queue.
package struct PushReport: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded

    /// How much of an APNs token operators see.
    package static let shownTokenDigits = 8
    /// The most log entries or registrations one read returns.
    package static let maxListed = 1_000

    /// The newest `limit` entries of `scope`'s delivery log, newest first. NOT_FOUND naming the
    /// user or device token when there is none.
    package func log(_ scope: PushLogScope, limit: Int) async throws -> [PushLogEntry] {
        let limit = Int64(min(max(limit, 1), Self.maxListed))
        var statement: SQL = """
            SELECT l.at, u.name, l.device_token_id, t.device_name, l.container, l.environment, l.notification_id::text,
                   l.push_type, l.outcome, l.status, l.reason, l.attempts, l.by_long_poll
            FROM push_log l JOIN users u ON u.id = l.user_id
            LEFT JOIN device_tokens t ON t.token_id = l.device_token_id
            """
        switch scope {
        case .everyone:
            break
        case .user(let name):
            let userID = try await DeviceStore(database: database, execution: execution).user(named: name)
            statement.append(" WHERE l.user_id = \(userID)")
        case .deviceToken(let tokenID):
            guard try await pool.queryFirst("SELECT 1 FROM device_tokens WHERE token_id = \(tokenID)", decode: { _ in true }) != nil else {
                throw SyncError(.notFound, "There is no device token \(tokenID).")
            }
            statement.append(" WHERE l.device_token_id = \(tokenID)")
        }
        statement.append(" ORDER BY l.at DESC, l.id DESC LIMIT \(limit)")
        return try await pool.query(statement) { row in
            PushLogEntry(at: try row.milliseconds(0), user: try row.string(1), deviceTokenID: try row.string(2),
                         deviceName: try row.optionalString(3), container: try row.string(4), environment: try row.string(5),
                         notificationID: try row.string(6), pushType: try row.string(7), outcome: try row.string(8),
                         status: try row.optionalInt64(9).map { Int($0) }, reason: try row.optionalString(10),
                         attempts: try row.int(11), byLongPoll: try row.bool(12))
        }
    }

    /// Registrations of live device tokens (of `user` when given; NOT_FOUND when there is no such
    /// user), by user, device, container and environment, at most `limit`; and how many there are.
    package func registrations(user: String?, limit: Int) async throws -> (total: Int, listed: [PushRegistrationListing]) {
        var filter: SQL = "t.revoked_at IS NULL"
        if let user {
            let userID = try await DeviceStore(database: database, execution: execution).user(named: user)
            filter.append(" AND r.user_id = \(userID)")
        }
        let limit = Int64(min(max(limit, 1), Self.maxListed))
        var counting: SQL = "SELECT count(*) FROM push_registrations r JOIN device_tokens t ON t.token_id = r.device_token_id WHERE "
        counting.append(filter)
        let total = try await pool.queryFirst(counting) { try $0.int(0) } ?? 0
        var listing: SQL = """
            SELECT u.name, r.device_token_id, t.device_name, r.container, r.environment, r.apns_environment,
                   left(r.apns_token, \(Int64(Self.shownTokenDigits))::int), r.registered_at,
                   (SELECT count(*) FROM push_outbox o WHERE o.registration_id = r.id),
                   l.at, l.outcome, l.status, l.reason
            FROM push_registrations r
            JOIN device_tokens t ON t.token_id = r.device_token_id
            JOIN users u ON u.id = r.user_id
            LEFT JOIN LATERAL (
                SELECT at, outcome, status, reason FROM push_log g
                WHERE g.device_token_id = r.device_token_id AND g.container = r.container AND g.environment = r.environment
                ORDER BY g.at DESC, g.id DESC LIMIT 1
            ) l ON true
            WHERE
            """
        listing.append(" ")
        listing.append(filter)
        listing.append(" ORDER BY u.name, t.device_name, r.container, r.environment LIMIT \(limit)")
        let listed = try await pool.query(listing) { row in
            PushRegistrationListing(
                user: try row.string(0), deviceTokenID: try row.string(1), deviceName: try row.string(2), container: try row.string(3),
                environment: try row.string(4), apnsEnvironment: try row.string(5), apnsTokenStart: try row.string(6),
                registeredAt: try row.milliseconds(7), queued: try row.int(8), lastAt: try row.optionalMilliseconds(9),
                lastOutcome: try row.optionalString(10), lastStatus: try row.optionalInt64(11).map { Int($0) },
                lastReason: try row.optionalString(12))
        }
        return (total, listed)
    }

    /// The outbox's depth and its oldest push (one scan of the outbox: it holds only pushes not
    /// yet ended, normally few).
    package func queue() async throws -> PushQueueSummary {
        let now = clock.nowMilliseconds()
        let read = try await pool.queryFirst("""
            SELECT count(*), count(*) FILTER (WHERE state = 'sending'), min(created_at) FROM push_outbox
            """) { row in (try row.int(0), try row.int(1), try row.optionalMilliseconds(2)) }
        return PushQueueSummary(depth: read?.0 ?? 0, sending: read?.1 ?? 0, oldestCreatedAt: read?.2, now: now)
    }
}
