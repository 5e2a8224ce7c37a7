import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

package struct NotificationPage: Sendable {
    package var notifications: [JSONValue]
    /// Position after the rows scanned (including the polling device's own, which are skipped).
    package var cursor: Int64
    package var moreComing: Bool
}

/// Who may poll a notification channel.
package enum ChannelAccess: Sendable {
    /// The token is unknown or revoked.
    case unauthenticated
    /// The channel is not this user's (answered exactly like a missing channel).
    case notFound
    case granted(Session)
}

/// The notification feed a database's subscriptions fill (the webcourier long-poll reads it).
package struct NotificationStore: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded
}

extension NotificationStore {
    /// A channel id names a database; signed so that it cannot be guessed or forged.
    package func channelID(databaseID: Int64) -> String {
        var payload: [UInt8] = []
        withUnsafeBytes(of: databaseID.bigEndian) { payload.append(contentsOf: $0) }
        return signer.sign(payload, context: "channel")
    }

    package func databaseID(channel: String) -> Int64? {
        guard let payload = signer.verify(channel, context: "channel"), payload.count == 8 else { return nil }
        return payload.reduce(0) { $0 << 8 | Int64($1) }
    }

    /// Cursors are signed positions bound to their database.
    package func cursor(databaseID: Int64, sequence: Int64) -> String {
        var payload: [UInt8] = []
        withUnsafeBytes(of: databaseID.bigEndian) { payload.append(contentsOf: $0) }
        withUnsafeBytes(of: sequence.bigEndian) { payload.append(contentsOf: $0) }
        return signer.sign(payload, context: "cursor")
    }

    package func sequence(cursor: String, databaseID: Int64) -> Int64? {
        guard let payload = signer.verify(cursor, context: "cursor"), payload.count == 16 else { return nil }
        let database = payload[0..<8].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        guard database == databaseID else { return nil }
        return payload[8..<16].reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    /// The newest notification position of a database.
    package func currentNotificationSequence(databaseID: Int64) async throws -> Int64 {
        try await pool.withConnection { connection in
            try connection.queryFirst("SELECT notification_seq FROM databases WHERE id = \(databaseID)") { try $0.int64(0) } ?? 0
        }
    }

    /// Resolves a bearer token for polling the channel of `databaseID`.
    package func channelAccess(tokenDigest: [UInt8], databaseID: Int64) async throws -> ChannelAccess {
        try await pool.withConnection { connection in
            let found = try connection.queryFirst("""
                SELECT \(unsafeColumns: AccountStore.sessionColumns)
                FROM device_tokens t JOIN users u ON u.id = t.user_id
                LEFT JOIN databases d ON d.id = \(databaseID) AND d.owner_user_id = t.user_id
                WHERE t.token_sha256 = \(tokenDigest) AND t.revoked_at IS NULL
                """) { row -> ChannelAccess in
                try AccountStore.decodeSession(row).map { .granted($0) } ?? .notFound
            }
            return found ?? .unauthenticated
        }
    }

    /// Notifications after `sequence`, in commit order, without the polling device's own; pages
    /// that hold only the device's own are skipped (the cursor moves past them), so a device that
    /// wrote a lot still sees the first notification from another device.
    package func notifications(_ session: Session, after sequence: Int64, limit: Int) async throws -> NotificationPage {
        var page = try await notificationPage(session, after: sequence, limit: limit)
        var pages = 1
        while page.notifications.isEmpty, page.moreComing, pages < 100 {
            page = try await notificationPage(session, after: page.cursor, limit: limit)
            pages += 1
        }
        return page
    }

    private func notificationPage(_ session: Session, after sequence: Int64, limit: Int) async throws -> NotificationPage {
        let rows = try await pool.withConnection { connection in
            try connection.query("""
                SELECT seq, origin_device, payload FROM notifications
                WHERE database_id = \(session.databaseID) AND seq > \(sequence)
                ORDER BY seq LIMIT \(Int64(limit + 1))
                """) { (sequence: try $0.int64(0), device: try $0.string(1), payload: try $0.jsonb(2)) }
        }
        let page = rows.prefix(limit)
        let delivered = page.filter { $0.device != session.deviceID }.compactMap { try? JSONValue.parse($0.payload) }
        return NotificationPage(notifications: delivered, cursor: page.last?.sequence ?? sequence, moreComing: rows.count > limit)
    }
}
