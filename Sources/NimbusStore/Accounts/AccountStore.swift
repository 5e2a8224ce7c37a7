import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// An authenticated request: whose token, which device, and which database it addresses.
package struct Session: Sendable, Hashable {
    package var userID: Int64
    package var userRecordName: String
    package var tokenID: String
    package var deviceID: String
    package var databaseID: Int64
    package var container: String
    package var environment: Environment

    package init(userID: Int64, userRecordName: String, tokenID: String, deviceID: String, databaseID: Int64,
                 container: String, environment: Environment) {
        self.userID = userID
        self.userRecordName = userRecordName
        self.tokenID = tokenID
        self.deviceID = deviceID
        self.databaseID = databaseID
        self.container = container
        self.environment = environment
    }
}

package struct UserSummary: Sendable, Hashable {
    package var name: String
    package var userRecordName: String
    package var createdAt: Date
    package var activeTokens: Int
}

package struct TokenSummary: Sendable, Hashable {
    package var tokenID: String
    package var deviceName: String
    package var createdAt: Date
    package var lastUsedAt: Date?
    package var revokedAt: Date?
}

/// A freshly issued device token: the secret is shown once and stored only as its SHA-256.
package struct IssuedToken: Sendable {
    package var tokenID: String
    package var secret: String
}

/// Writes `last_used_at` at most once a minute per token per instance, so authentication stays
/// a read on the hot path.
final class TokenUseRecorder: Sendable {
    private let lastWrites = Lock<[String: UInt64]>([:])

    /// Whether `shouldRecord` would record now (without recording).
    func isDue(_ tokenID: String) -> Bool {
        let now = monotonicNanoseconds()
        return lastWrites.withLock { writes in writes[tokenID].map { now - $0 >= 60_000_000_000 } ?? true }
    }

    func shouldRecord(_ tokenID: String) -> Bool {
        let now = monotonicNanoseconds()
        return lastWrites.withLock { writes in
            if let last = writes[tokenID], now - last < 60_000_000_000 { return false }
            writes[tokenID] = now
            if writes.count > 100_000 { writes.removeAll() }
            return true
        }
    }
}

/// Accounts: users, device tokens and the sessions they open.
package struct AccountStore: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded
}

extension AccountStore {
    /// Columns naming a session, shared by the lookups that authorize channels, uploads and
    /// downloads: token, user, and the database the handle resolves to (NULL: not this user's).
    static let sessionColumns: StaticString = "t.user_id, u.record_name, t.token_id, t.device_name, d.id, d.container, d.environment"

    /// A session from `sessionColumns` at the start of a row; nil when the database column is
    /// NULL (the handle is unknown or belongs to another user).
    static func decodeSession(_ row: PGRow) throws -> Session? {
        guard !row.isNull(4), let environment = Environment(rawValue: try row.string(6)) else { return nil }
        return Session(userID: try row.int64(0), userRecordName: try row.string(1), tokenID: try row.string(2),
                       deviceID: try row.string(3), databaseID: try row.int64(4), container: try row.string(5), environment: environment)
    }

    /// The SHA-256 of a bearer token, as stored.
    package static func tokenDigest(_ secret: String) -> [UInt8] {
        SHA256.hash(secret)
    }

    /// `tokenDigest(_:)` of a token given as its UTF-8 bytes (a request's header).
    package static func tokenDigest(utf8 secret: UnsafeRawBufferPointer) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(secret)
        return hasher.finalize()
    }

    /// Resolves a bearer token and the private database it addresses (created on first use,
    /// with its `_defaultZone`). nil when the token is unknown or revoked.
    package func session(tokenDigest: [UInt8], container: String, environment: Environment) async throws -> Session? {
        let key = WriteCaches.SessionKey(tokenDigest: tokenDigest, container: container, environment: environment)
        let session = try await lookUpSession(tokenDigest: tokenDigest, container: container, environment: environment)
        if let session { caches.remember(session, for: key) } else { caches.forgetSession(key) }
        return session
    }

    /// The session this token resolved to earlier on this instance, not checked again: only
    /// `modifyRecords` and `recordChanges` take it (with `SessionProof.cached`), and they check
    /// that the token is still live.
    package func cachedSession(tokenDigest: [UInt8], container: String, environment: Environment) -> Session? {
        guard let session = caches.session(WriteCaches.SessionKey(tokenDigest: tokenDigest, container: container, environment: environment)),
              !tokenUse.isDue(session.tokenID) else { return nil }
        return session
    }

    /// One statement on the request's event loop when it can be; recording the token's use
    /// (every few minutes) and creating the private database (once) take a connection of their own.
    private func lookUpSession(tokenDigest: [UInt8], container: String, environment: Environment) async throws -> Session? {
        typealias Row = (userID: Int64, userRecordName: String, tokenID: String, device: String, databaseID: Int64?)
        let found: Row? = try await pool.queryFirst("""
            SELECT t.user_id, u.record_name, t.token_id, t.device_name, d.id
            FROM device_tokens t
            JOIN users u ON u.id = t.user_id
            LEFT JOIN databases d ON d.owner_user_id = t.user_id AND d.container = \(container)
                 AND d.environment = \(environment.rawValue) AND d.scope = 'private'
            WHERE t.token_sha256 = \(tokenDigest) AND t.revoked_at IS NULL
            """) { row in
            (try row.int64(0), try row.string(1), try row.string(2), try row.string(3), try row.optionalInt64(4))
        }
        guard let found else { return nil }
        var databaseID = found.databaseID
        let recordingUse = tokenUse.shouldRecord(found.tokenID)
        if recordingUse || databaseID == nil {
            databaseID = try await pool.withConnection { connection in
                if recordingUse {
                    try connection.run("UPDATE device_tokens SET last_used_at = now() WHERE token_id = \(found.tokenID)")
                }
                return try found.databaseID ?? Self.createPrivateDatabase(connection, userID: found.userID,
                                                                          container: container, environment: environment)
            }
        }
        guard let databaseID else { return nil }
        return Session(userID: found.userID, userRecordName: found.userRecordName, tokenID: found.tokenID,
                       deviceID: found.device, databaseID: databaseID, container: container, environment: environment)
    }

    /// The id of `userID`'s private database of a container and environment, created (with its
    /// `_defaultZone`) when missing: for admin tools acting for the user.
    package func privateDatabase(userID: Int64, container: String, environment: Environment) async throws -> Int64 {
        try await pool.withConnection { connection in
            try Self.createPrivateDatabase(connection, userID: userID, container: container, environment: environment)
        }
    }

    private static func createPrivateDatabase(_ connection: PGConnection, userID: Int64, container: String, environment: Environment) throws -> Int64 {
        try connection.withTransaction { connection in
            try connection.run("""
                INSERT INTO databases (owner_user_id, container, environment, scope)
                VALUES (\(userID), \(container), \(environment.rawValue), 'private')
                ON CONFLICT DO NOTHING
                """)
            let id = try connection.queryFirst("""
                SELECT id FROM databases WHERE owner_user_id = \(userID) AND container = \(container)
                AND environment = \(environment.rawValue) AND scope = 'private'
                """) { try $0.int64(0) }
            guard let id else { throw PGError(.server, "the private database could not be created") }
            try connection.run("""
                INSERT INTO zones (database_id, zone_name) VALUES (\(id), \(Names.defaultZone)) ON CONFLICT DO NOTHING
                """)
            return id
        }
    }

    // MARK: - Admin (CLI)

    package func addUser(name: String) async throws -> UserSummary {
        guard !name.isEmpty, name.count <= 255, !name.contains(where: { $0.isNewline || $0 == "\0" }) else {
            throw SyncError(.badRequest, "A user name is 1–255 characters without line breaks.")
        }
        var random = SystemRandomNumberGenerator()
        let recordName = "_" + Hex.encode((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &random) })
        return try await pool.withConnection { connection in
            do {
                return try connection.queryFirst("""
                    INSERT INTO users (name, record_name) VALUES (\(name), \(recordName))
                    RETURNING name, record_name, created_at
                    """) { row in
                    UserSummary(name: try row.string(0), userRecordName: try row.string(1), createdAt: try row.date(2), activeTokens: 0)
                } ?? UserSummary(name: name, userRecordName: recordName, createdAt: Date(), activeTokens: 0)
            } catch let error as PGError where error.sqlState == PGError.SQLState.uniqueViolation {
                throw SyncError(.exists, "A user named \(name) already exists.")
            }
        }
    }

    package func listUsers() async throws -> [UserSummary] {
        try await pool.withConnection { connection in
            try connection.query("""
                SELECT u.name, u.record_name, u.created_at,
                       (SELECT count(*) FROM device_tokens t WHERE t.user_id = u.id AND t.revoked_at IS NULL)
                FROM users u ORDER BY u.name
                """) { row in
                UserSummary(name: try row.string(0), userRecordName: try row.string(1), createdAt: try row.date(2),
                            activeTokens: try row.int(3))
            }
        }
    }

    /// Issues a token for a user's device: 256 random bits, base64url; only its SHA-256 is kept.
    /// A name one of the user's live tokens has is refused as enrollment refuses it.
    package func issueToken(user: String, device: String) async throws -> IssuedToken {
        try await issueToken(user: user, device: device, alongside: nil)
    }

    /// `issueToken`, running `alongside` with the new token in the insert's transaction.
    func issueToken(user: String, device: String, alongside: (@Sendable (PGConnection, IssuedToken) throws -> Void)?) async throws -> IssuedToken {
        let field = "The device name"
        if let problem = DeviceName.problem(device, field: field) { throw SyncError(.badRequest, problem) }
        var random = SystemRandomNumberGenerator()
        let token = Self.makeToken(using: &random)
        let found = try await pool.withTransaction { connection -> Bool in
            guard let userID = try connection.queryFirst("SELECT id FROM users WHERE name = \(user)", decode: { try $0.int64(0) }) else {
                return false
            }
            try Self.insertToken(connection, userID: userID, token: token, deviceName: device, field: field)
            try alongside?(connection, token)
            return true
        }
        guard found else { throw SyncError(.notFound, "There is no user named \(user).") }
        return token
    }

    /// Inserts a live token of `userID` named `deviceName`, or throws `DeviceName.inUse` when a
    /// live token of the user has that name. The unique index `device_tokens_live_name` decides,
    /// so of concurrent inserts of one name exactly one wins (a check before the insert would let
    /// all of them pass). Every path that creates device tokens comes here.
    static func insertToken(_ connection: PGConnection, userID: Int64, token: IssuedToken, deviceName: String,
                            field: String = "deviceName") throws {
        let inserted = try connection.queryFirst("""
            INSERT INTO device_tokens (user_id, token_id, token_sha256, device_name)
            VALUES (\(userID), \(token.tokenID), \(tokenDigest(token.secret)), \(deviceName))
            ON CONFLICT (user_id, device_name) WHERE revoked_at IS NULL DO NOTHING
            RETURNING 1
            """) { _ in true } ?? false
        guard inserted else { throw DeviceName.inUse(deviceName, field: field) }
    }

    /// A fresh token: a 256-bit secret (base64url) and a public id `tok_...` (72 bits; `adm_...`
    /// for admin tokens).
    static func makeToken(idPrefix: String = "tok_", using random: inout some RandomNumberGenerator) -> IssuedToken {
        let secret = Base64URL.encode((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &random) })
        let tokenID = idPrefix + Base64URL.encode((0..<9).map { _ in UInt8.random(in: .min ... .max, using: &random) })
        return IssuedToken(tokenID: tokenID, secret: secret)
    }

    package func listTokens(user: String) async throws -> [TokenSummary] {
        let (exists, tokens) = try await pool.withConnection { connection in
            let exists = try connection.queryFirst("SELECT 1 FROM users WHERE name = \(user)") { _ in true } ?? false
            let tokens = try connection.query("""
                SELECT t.token_id, t.device_name, t.created_at, t.last_used_at, t.revoked_at
                FROM device_tokens t JOIN users u ON u.id = t.user_id
                WHERE u.name = \(user) ORDER BY t.created_at, t.token_id
                """) { row in
                TokenSummary(tokenID: try row.string(0), deviceName: try row.string(1), createdAt: try row.date(2),
                             lastUsedAt: try row.optionalDate(3), revokedAt: try row.optionalDate(4))
            }
            return (exists, tokens)
        }
        guard exists else { throw SyncError(.notFound, "There is no user named \(user).") }
        return tokens
    }

    /// Revokes a token; the next request with it is refused (no cache stands in the way) and its
    /// parked long-polls are answered at once on every instance (`revokeTokens`).
    package func revokeToken(tokenID: String) async throws {
        try await revokeToken(tokenID: tokenID, alongside: nil)
    }

    /// `revokeToken`, running `alongside` in the revocation's transaction when it revoked the token.
    func revokeToken(tokenID: String, alongside: InTransaction?) async throws {
        let changed = try await revokeTokens("""
            UPDATE device_tokens SET revoked_at = now() WHERE token_id = \(tokenID) AND revoked_at IS NULL RETURNING token_id
            """, alongside: alongside)
        if changed.isEmpty {
            let exists = try await pool.withConnection { connection in
                try connection.queryFirst("SELECT 1 FROM device_tokens WHERE token_id = \(tokenID)") { _ in true } ?? false
            }
            throw SyncError(exists ? .badRequest : .notFound, exists ? "Token \(tokenID) is already revoked." : "There is no token \(tokenID).")
        }
    }
}
