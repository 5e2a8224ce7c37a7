import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The device token a request carries, without a container (devices belong to a user).
package struct TokenOwner: Sendable, Hashable {
    package var userID: Int64
    package var userName: String
    package var userRecordName: String
    package var tokenID: String
    package var deviceName: String
}

/// A pairing code as issued: the code itself is shown this once.
package struct IssuedPairingCode: Sendable, Hashable {
    package var code: PairingCode
    package var expiresAt: Int64
}

/// A new device's token from `enroll`: the secret is shown this once.
package struct Enrollment: Sendable {
    package var token: IssuedToken
    package var userRecordName: String
    package var deviceName: String
}

/// A live token of a user, as `GET /devices` lists it.
package struct DeviceSummary: Sendable, Hashable {
    package var tokenID: String
    package var deviceName: String
    package var createdAt: Int64
    package var lastUsedAt: Int64?
}

/// Devices: pairing codes, enrollment with them, and a user's own list and revocation of tokens.
package struct DeviceStore: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded
}

extension DeviceStore {
    /// The live token with this digest and its user; nil when unknown or revoked.
    package func owner(tokenDigest: [UInt8]) async throws -> TokenOwner? {
        try await pool.queryFirst("""
            SELECT u.id, u.name, u.record_name, t.token_id, t.device_name
            FROM device_tokens t JOIN users u ON u.id = t.user_id
            WHERE t.token_sha256 = \(tokenDigest) AND t.revoked_at IS NULL
            """) { row in
            TokenOwner(userID: try row.int64(0), userName: try row.string(1), userRecordName: try row.string(2),
                       tokenID: try row.string(3), deviceName: try row.string(4))
        }
    }

    /// The user with this name, as a pairing owner for `nimbus device pair` (no token).
    package func user(named name: String) async throws -> Int64 {
        guard let id = try await pool.queryFirst("SELECT id FROM users WHERE name = \(name)", decode: { try $0.int64(0) }) else {
            throw SyncError(.notFound, "There is no user named \(name).")
        }
        return id
    }

    /// A fresh single-use code for `userID`, expiring after `limits.pairingCodeSeconds`. THROTTLED
    /// when the user already holds `limits.maxPendingPairingCodes` redeemable codes.
    package func pair(userID: Int64, byToken tokenID: String?, deviceNameHint: String?, limits: Limits) async throws -> IssuedPairingCode {
        try await pair(userID: userID, byToken: tokenID, deviceNameHint: deviceNameHint, limits: limits, alongside: nil)
    }

    /// `pair`, running `alongside` in the code's transaction once the code is in.
    func pair(userID: Int64, byToken tokenID: String?, deviceNameHint: String?, limits: Limits,
              alongside: InTransaction?) async throws -> IssuedPairingCode {
        var random = SystemRandomNumberGenerator()
        let code = PairingCode(using: &random)
        let digest = SHA256.hash(code.text)
        let now = clock.nowMilliseconds()
        let expiresAt = now + Int64(limits.pairingCodeSeconds) * 1000
        let cap = limits.maxPendingPairingCodes
        let pending = try await pool.withTransaction { connection -> Int in
            // The user's row lock orders concurrent requests for codes: the cap holds.
            _ = try connection.queryFirst("SELECT 1 FROM users WHERE id = \(userID) FOR UPDATE") { _ in true }
            try connection.run("""
                DELETE FROM pairing_codes WHERE user_id = \(userID)
                  AND expires_at < 'epoch'::timestamptz + \(now - 86_400_000) * interval '1 millisecond'
                """)
            let pending = try connection.queryFirst("""
                SELECT count(*) FROM pairing_codes c WHERE c.user_id = \(userID) AND \(Self.redeemable(now: now))
                """) { try $0.int(0) } ?? 0
            guard pending < cap else { return pending }
            try connection.run("""
                INSERT INTO pairing_codes (code_sha256, user_id, created_by_token, device_name_hint, expires_at)
                VALUES (\(digest), \(userID), \(tokenID), \(deviceNameHint),
                        'epoch'::timestamptz + \(expiresAt) * interval '1 millisecond')
                """)
            try alongside?(connection)
            return pending
        }
        guard pending < cap else {
            throw SyncError(.throttled, "This user already has \(pending) unexpired pairing codes (maxPendingPairingCodes is \(cap)); "
                + "use one or wait until one expires.", retryAfter: max(1, limits.pairingCodeSeconds))
        }
        return IssuedPairingCode(code: code, expiresAt: expiresAt)
    }

    /// Redeems `code` for a new token named `deviceName`; nil when the code is wrong, expired, used
    /// or voided by its device's revocation (one answer for all). The code is spent only by a
    /// successful enrollment, which also deletes `reservation` (it was no failure): a name the
    /// user's live tokens already have is refused and leaves the code usable.
    package func enroll(code: PairingCode, deviceName: String, reservation: EnrollmentReservation? = nil) async throws -> Enrollment? {
        let digest = SHA256.hash(code.text)
        let now = clock.nowMilliseconds()
        var random = SystemRandomNumberGenerator()
        let token = AccountStore.makeToken(using: &random)
        return try await pool.withTransaction { connection -> Enrollment? in
            // The row lock makes a code single-use: a second redemption waits, then finds it used.
            guard let owner = try connection.queryFirst("""
                SELECT c.user_id, u.record_name FROM pairing_codes c JOIN users u ON u.id = c.user_id
                WHERE c.code_sha256 = \(digest) AND \(Self.redeemable(now: now))
                FOR UPDATE OF c
                """, decode: { (userID: try $0.int64(0), recordName: try $0.string(1)) }) else { return nil }
            try AccountStore.insertToken(connection, userID: owner.userID, token: token, deviceName: deviceName)
            try connection.run("""
                UPDATE pairing_codes SET used_at = now(), enrolled_token = \(token.tokenID) WHERE code_sha256 = \(digest)
                """)
            if let id = reservation?.id { try connection.run(Self.deleteReservation(id)) }
            return Enrollment(token: token, userRecordName: owner.recordName, deviceName: deviceName)
        }
    }

    /// A pairing code `c` that can still enroll a device at `now`: unused, unexpired, and asked
    /// for on the shell or the console (no token) or by a device token that is still live.
    /// Revoking a device voids its codes here, for every revocation path and for revocations by
    /// an older binary alike; voided codes stop counting toward `maxPendingPairingCodes` too.
    static func redeemable(now: Int64) -> SQL {
        """
        c.used_at IS NULL AND c.expires_at > 'epoch'::timestamptz + \(now) * interval '1 millisecond'
          AND (c.created_by_token IS NULL OR EXISTS (
            SELECT 1 FROM device_tokens t WHERE t.token_id = c.created_by_token AND t.revoked_at IS NULL))
        """
    }

    /// The user's live tokens, oldest first.
    package func devices(userID: Int64) async throws -> [DeviceSummary] {
        try await pool.query("""
            SELECT token_id, device_name, created_at, last_used_at
            FROM device_tokens WHERE user_id = \(userID) AND revoked_at IS NULL
            ORDER BY created_at, token_id
            """) { row in
            DeviceSummary(tokenID: try row.string(0), deviceName: try row.string(1), createdAt: try row.milliseconds(2),
                          lastUsedAt: row.isNull(3) ? nil : try row.milliseconds(3))
        }
    }

    /// Revokes one of the user's own tokens (itself included). NOT_FOUND for a token id that is not
    /// the user's, whoever's it is; revoking an already revoked token of the user succeeds again.
    /// Its parked long-polls are answered at once on every instance (`revokeTokens`).
    package func revoke(tokenID: String, userID: Int64) async throws {
        let found = try await !revokeTokens("""
            UPDATE device_tokens SET revoked_at = coalesce(revoked_at, now())
            WHERE token_id = \(tokenID) AND user_id = \(userID) RETURNING token_id
            """).isEmpty
        guard found else { throw SyncError(.notFound, "This user has no device token \(Names.quoted(tokenID)).") }
    }
}
