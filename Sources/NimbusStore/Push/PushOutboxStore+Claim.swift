import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

extension PushOutboxStore {
    /// A due row, locked by this claim.
    private struct Due: Sendable {
        var id: Int64
        var registrationID: Int64
        var kind: String
        var collapseKey: String?
        var sequence: Int64
        var expired: Bool
        var revoked: Bool
        /// `--apns-topics` names the registration's container.
        var hasTopic: Bool
    }

    /// Claims at most `limit` pushes due at `now` (milliseconds since 1970; default the store's
    /// clock), earliest first, and leases them for `leaseMillis`: until then no other claimer, on
    /// any instance, gets them (`FOR UPDATE SKIP LOCKED`, then the lease in `due_at`). In the same
    /// transaction: due pushes that expired, whose device token was revoked (by a binary that
    /// did not remove registrations), or whose container no longer has a topic are removed and
    /// logged; background pushes go through their
    /// device's window (`BackgroundPushWindow`): merged per zone, and held past a full window.
    package func claimDuePushes(limit: Int, now: Int64? = nil, limits: Limits = Limits()) async throws -> [ClaimedPush] {
        let now = now ?? clock.nowMilliseconds()
        let topics = database.push.topics
        let maxPerHour = limits.maxBackgroundPushesPerHour
        let rows = try await pool.withTransaction { connection in
            let due = try connection.query("""
                SELECT o.id, o.registration_id, o.push_type, o.collapse_key, o.notification_seq,
                       o.expires_at <= \(PushSQL.time(now)), t.revoked_at IS NOT NULL, r.container
                FROM push_outbox o
                JOIN push_registrations r ON r.id = o.registration_id
                JOIN device_tokens t ON t.token_id = r.device_token_id
                WHERE o.due_at <= \(PushSQL.time(now))
                ORDER BY o.due_at, o.id
                LIMIT \(Int64(max(limit, 0)))
                FOR UPDATE OF o SKIP LOCKED
                """) { row in
                Due(id: try row.int64(0), registrationID: try row.int64(1), kind: try row.string(2), collapseKey: try row.optionalString(3),
                    sequence: try row.int64(4), expired: try row.bool(5), revoked: try row.bool(6),
                    hasTopic: topics[try row.string(7)] != nil)
            }
            guard !due.isEmpty else { return [ClaimRow]() }
            let expired = due.filter(\.expired).map(\.id), revoked = due.filter { !$0.expired && $0.revoked }.map(\.id)
            let untopical = due.filter { !$0.expired && !$0.revoked && !$0.hasTopic }.map(\.id)
            try Self.drop(connection, expired, outcome: "expired-queued", now: now)
            try Self.drop(connection, revoked, outcome: "revoked", now: now)
            try Self.drop(connection, untopical, outcome: "no-topic", now: now)
            let live = due.filter { !$0.expired && !$0.revoked && $0.hasTopic }
            var send = live.filter { $0.kind != PushKind.background.rawValue }.map(\.id)
            send += try Self.applyBackgroundWindows(connection, live.filter { $0.kind == PushKind.background.rawValue },
                                                    maxPerHour: maxPerHour, now: now)
            guard !send.isEmpty else { return [] }
            return try connection.query("""
                WITH claimed AS (
                    UPDATE push_outbox o SET state = 'sending', attempts = o.attempts + 1,
                        due_at = \(PushSQL.time(now + Self.leaseMillis))
                    WHERE o.id = ANY(\(PGData.int64Array(send)))
                    RETURNING o.*
                )
                SELECT c.id, c.attempts, c.push_type, c.apns_id::text, c.collapse_key, c.expires_at, c.registration_id,
                       r.apns_environment, r.apns_token, r.user_id, r.device_token_id, r.container, r.environment,
                       c.notification_id::text, n.payload, c.database_id, c.notification_seq, c.long_poll_first,
                       coalesce(s.notification_info -> 'shouldBadge' = 'true'::jsonb, false)
                FROM claimed c
                JOIN push_registrations r ON r.id = c.registration_id
                JOIN notifications n ON n.database_id = c.database_id AND n.seq = c.notification_seq
                LEFT JOIN subscriptions s ON s.database_id = c.database_id AND s.subscription_id = n.subscription_id
                ORDER BY c.created_at, c.id
                """, decode: ClaimRow.init)
        }
        let notifications = self.notifications
        return rows.map { row in
            ClaimedPush(outboxID: row.id, attempt: row.attempt, kind: PushKind(rawValue: row.kind) ?? .alert, apnsID: row.apnsID,
                        collapseKey: row.collapse, expiresAt: row.expires, registrationID: row.registration,
                        apnsEnvironment: Environment(rawValue: row.apnsEnvironment) ?? .production, apnsToken: row.apnsToken,
                        topic: topics[row.container] ?? "", userID: row.userID, deviceTokenID: row.device, container: row.container,
                        environment: Environment(rawValue: row.environment) ?? .production, notificationID: row.notificationID,
                        notification: (try? JSONValue.parse(row.payload)) ?? .object([:]),
                        cursor: notifications.cursor(databaseID: row.databaseID, sequence: row.sequence),
                        longPollFirst: row.longPollFirst, badge: row.badge)
        }
    }

    /// A claimed row as the statement returns it.
    private struct ClaimRow: Sendable {
        var id: Int64, attempt: Int, kind: String, apnsID: String, collapse: String?, expires: Int64, registration: Int64
        var apnsEnvironment: String, apnsToken: String, userID: Int64, device: String, container: String, environment: String
        var notificationID: String, payload: String, databaseID: Int64, sequence: Int64, longPollFirst: Bool, badge: Bool

        init(_ row: PGRow) throws {
            id = try row.int64(0); attempt = try row.int(1); kind = try row.string(2); apnsID = try row.string(3)
            collapse = try row.optionalString(4); expires = try row.milliseconds(5); registration = try row.int64(6)
            apnsEnvironment = try row.string(7); apnsToken = try row.string(8); userID = try row.int64(9); device = try row.string(10)
            container = try row.string(11); environment = try row.string(12); notificationID = try row.string(13)
            payload = try row.jsonb(14); databaseID = try row.int64(15); sequence = try row.int64(16); longPollFirst = try row.bool(17)
            badge = try row.bool(18)
        }
    }

    /// Deletes outbox rows `ids` and logs each with `outcome` (no attempt made).
    private static func drop(_ connection: PGConnection, _ ids: [Int64], outcome: String, now: Int64) throws {
        guard !ids.isEmpty else { return }
        try connection.run("""
            WITH dropped AS (
                DELETE FROM push_outbox o WHERE o.id = ANY(\(PGData.int64Array(ids)))
                RETURNING o.registration_id, o.notification_id, o.push_type, o.attempts
            )
            INSERT INTO push_log (at, user_id, device_token_id, container, environment, notification_id, push_type, outcome, attempts)
            SELECT \(PushSQL.time(now)), r.user_id, r.device_token_id, r.container, r.environment, d.notification_id,
                   d.push_type, \(outcome), d.attempts
            FROM dropped d JOIN push_registrations r ON r.id = d.registration_id
            """)
    }

    /// Background pushes due now, through their devices' windows: the registrations' rows are
    /// locked, so claimers on every instance take turns per device (`NO KEY UPDATE`: writers
    /// queueing pushes for the device, which take `KEY SHARE` through the foreign key, are not
    /// held up; `SKIP LOCKED`: a device another claimer is deciding keeps its pushes due for the
    /// next claim instead of waiting). Merged pushes are dropped and logged, held ones wait until
    /// the window opens, and the send times are stored. Returns the ids to send.
    private static func applyBackgroundWindows(_ connection: PGConnection, _ due: [Due], maxPerHour: Int, now: Int64) throws -> [Int64] {
        guard !due.isEmpty else { return [] }
        let registrations = Array(Set(due.map(\.registrationID))).sorted()
        let windows = try connection.query("""
            SELECT id, array_to_string(background_sent_at, ',') FROM push_registrations
            WHERE id = ANY(\(PGData.int64Array(registrations))) ORDER BY id FOR NO KEY UPDATE SKIP LOCKED
            """) { (try $0.int64(0), try $0.string(1).split(separator: ",").compactMap { Int64($0) }) }
        var send: [Int64] = [], merged: [Int64] = []
        var held: [(ids: [Int64], until: Int64)] = []
        var stored: [(id: Int64, sentAt: [Int64])] = []
        for (registration, sentAt) in windows {
            let candidates = due.filter { $0.registrationID == registration }
                .map { BackgroundPushWindow.Candidate(id: $0.id, zone: $0.collapseKey ?? "", sequence: $0.sequence) }
            let plan = BackgroundPushWindow.plan(sentAt: sentAt, candidates: candidates, maxPerHour: maxPerHour, now: now)
            send += plan.send
            merged += plan.merged
            if let opensAt = plan.opensAt, !plan.hold.isEmpty { held.append((plan.hold, opensAt)) }
            stored.append((registration, plan.sentAt))
        }
        try drop(connection, merged, outcome: "merged", now: now)
        for hold in held {
            try connection.run("""
                UPDATE push_outbox SET state = 'queued', due_at = \(PushSQL.time(hold.until)) WHERE id = ANY(\(PGData.int64Array(hold.ids)))
                """)
        }
        for window in stored {
            try connection.run("""
                UPDATE push_registrations SET background_sent_at = \(PGData.int64Array(window.sentAt)) WHERE id = \(window.id)
                """)
        }
        return send
    }
}
