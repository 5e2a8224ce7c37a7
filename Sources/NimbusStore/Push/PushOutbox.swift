import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The outbox write (docs/push.md "Registrations and the outbox"): in the transaction that writes
/// notifications, one push per (notification, registered device of the subscription's user in the
/// container and environment), except the device whose change fired it. The push commits with its
/// notification or not at all.
enum PushOutbox {
    /// A notification just written, as the outbox needs it.
    struct Written {
        var sequence: Int64
        var notificationID: String
        var kind: PushKind?
        var zoneName: String
    }

    /// A registered device that gets the pushes.
    struct Recipient {
        var registrationID: Int64
        var deviceTokenID: String
        /// A long-poll of the device is parked on some instance (`push_long_polls`).
        var longPolling = false
    }

    /// A row to insert.
    struct Row: Equatable {
        var notificationSequence: Int64
        var notificationID: String
        var registrationID: Int64
        var kind: PushKind
        var apnsID: String
        var collapseKey: String?
        var longPollFirst: Bool
        var dueAt: Int64
    }

    /// The notifications `LockedWrite.writeNotifications` just wrote, the last at `newest`.
    static func written(_ rows: [(subscription: Subscription, payload: JSONValue, record: Record)], newest: Int64) -> [Written] {
        let first = newest - Int64(rows.count) + 1
        return rows.enumerated().map { index, row in
            Written(sequence: first + Int64(index), notificationID: row.payload["notificationID"]?.stringValue ?? "",
                    kind: PushKind.of(notificationInfo: row.subscription.notificationInfo), zoneName: row.record.zoneName)
        }
    }

    /// The rows for `written` × `recipients`: notifications whose subscription gives no push are
    /// left out; a device with a long-poll parked on this database (`isParked`: on this instance;
    /// `Recipient.longPolling`: on any) gets its push `graceMillis` later, so the long-poll can
    /// deliver it first.
    static func rows(_ written: [Written], recipients: [Recipient], now: Int64, graceMillis: Int,
                     isParked: (String) -> Bool) -> [Row] {
        let parked = recipients.map { $0.longPolling || isParked($0.deviceTokenID) }
        return written.flatMap { notification -> [Row] in
            guard let kind = notification.kind else { return [] }
            return zip(recipients, parked).map { recipient, first in
                return Row(notificationSequence: notification.sequence, notificationID: notification.notificationID,
                           registrationID: recipient.registrationID, kind: kind,
                           apnsID: PushIdentifier.apnsID(notificationID: notification.notificationID, deviceTokenID: recipient.deviceTokenID),
                           collapseKey: kind == .background ? notification.zoneName : nil,
                           longPollFirst: first, dueAt: now + (first ? Int64(max(graceMillis, 0)) : 0))
            }
        }
    }

    /// Queues the pushes of `written` (notifications of `session`'s database) in `connection`'s
    /// transaction. Nothing when no notification gives a push or no other device is registered.
    /// Returns the number of pushes queued.
    @discardableResult
    static func enqueue(_ connection: PGConnection, written: [Written], session: Session, now: Int64, limits: Limits,
                        isParked: (String) -> Bool) throws -> Int {
        guard written.contains(where: { $0.kind != nil }) else { return 0 }
        // The owner's live devices registered here, but not the writing device (by name, as the
        // long-poll skips a device's own notifications; a name is unique among live tokens).
        let recipients = try connection.query("""
            SELECT r.id, r.device_token_id,
                   EXISTS (SELECT 1 FROM push_long_polls p WHERE p.registration_id = r.id AND p.until > \(PushSQL.time(now)))
            FROM push_registrations r
            JOIN device_tokens t ON t.token_id = r.device_token_id AND t.revoked_at IS NULL
            WHERE r.user_id = \(session.userID) AND r.container = \(session.container)
              AND r.environment = \(session.environment.rawValue) AND t.device_name <> \(session.deviceID)
            ORDER BY r.id
            """) { Recipient(registrationID: try $0.int64(0), deviceTokenID: try $0.string(1), longPolling: try $0.bool(2)) }
        let rows = rows(written, recipients: recipients, now: now, graceMillis: limits.pushGraceMillis, isParked: isParked)
        guard !rows.isEmpty else { return 0 }
        let expiresAt = now + Int64(limits.notificationRetentionDays) * 86_400_000
        return try connection.run("""
            INSERT INTO push_outbox (database_id, notification_seq, notification_id, registration_id, push_type, apns_id,
                                     collapse_key, long_poll_first, due_at, expires_at, created_at)
            SELECT \(session.databaseID), u.seq, u.nid::uuid, u.reg, u.kind, u.apns::uuid, NULLIF(u.collapse, ''), u.first = 1,
                   \(PushSQL.time(0)) + u.due * interval '1 millisecond', \(PushSQL.time(expiresAt)), \(PushSQL.time(now))
            FROM unnest(\(PGData.int64Array(rows.map(\.notificationSequence))), \(PGData.textArray(rows.map(\.notificationID))),
                        \(PGData.int64Array(rows.map(\.registrationID))), \(PGData.textArray(rows.map(\.kind.rawValue))),
                        \(PGData.textArray(rows.map(\.apnsID))), \(PGData.textArray(rows.map { $0.collapseKey ?? "" })),
                        \(PGData.int64Array(rows.map { $0.longPollFirst ? 1 : 0 })), \(PGData.int64Array(rows.map(\.dueAt))))
                 AS u(seq, nid, reg, kind, apns, collapse, first, due)
            ON CONFLICT DO NOTHING
            """)
    }
}
