import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// An admin token as listed (never its secret).
package struct AdminTokenSummary: Sendable, Hashable {
    package var tokenID: String
    package var name: String
    package var createdAt: Date
    package var lastUsedAt: Date?
    package var revokedAt: Date?
}

/// Who made an admin request: the live admin token it carried.
package struct AdminIdentity: Sendable, Hashable {
    package var tokenID: String
    package var name: String

    package init(tokenID: String, name: String) {
        self.tokenID = tokenID
        self.name = name
    }
}

/// One line of the admin audit trail: who did what to which target, when.
package struct AuditEntry: Sendable, Hashable {
    package var id: Int64
    package var at: Date
    package var tokenID: String
    package var adminName: String
    package var action: String
    package var target: String
    /// Details as a JSON object's text.
    package var detail: String
}

/// Admin tokens (distinct from device tokens; only digests are stored) and the audit trail of
/// every mutation made through the admin API.
package struct AdminStore: DatabaseBacked {
    package let database: Database
    package var execution: Execution = .offloaded {
        // The stores it calls run as it does.
        didSet { accounts = accounts.on(execution); devices = devices.on(execution); schemas = schemas.on(execution); records = records.on(execution); assets = assets.on(execution) }
    }
    /// The console's writes go through these, each with its audit entry in the same transaction.
    var accounts: AccountStore
    var devices: DeviceStore
    var schemas: SchemaStore
    var records: RecordStore
    /// Asset bytes for the record browser.
    var assets: AssetStore
}

extension AdminStore {
    /// A new admin token: the secret is shown this once.
    package func issueToken(name: String) async throws -> IssuedToken {
        if let problem = DeviceName.problem(name, field: "The admin token's name") { throw SyncError(.badRequest, problem) }
        var random = SystemRandomNumberGenerator()
        let token = AccountStore.makeToken(idPrefix: "adm_", using: &random)
        let digest = AccountStore.tokenDigest(token.secret)
        _ = try await pool.withConnection { connection in
            try connection.run("INSERT INTO admin_tokens (token_id, token_sha256, name) VALUES (\(token.tokenID), \(digest), \(name))")
        }
        return token
    }

    package func listTokens() async throws -> [AdminTokenSummary] {
        try await pool.query("SELECT token_id, name, created_at, last_used_at, revoked_at FROM admin_tokens ORDER BY created_at, token_id") { row in
            AdminTokenSummary(tokenID: try row.string(0), name: try row.string(1), createdAt: try row.date(2),
                              lastUsedAt: try row.optionalDate(3), revokedAt: try row.optionalDate(4))
        }
    }

    /// Revokes an admin token; its next request is refused.
    package func revokeToken(tokenID: String) async throws {
        let changed = try await pool.withConnection { connection in
            try connection.run("UPDATE admin_tokens SET revoked_at = now() WHERE token_id = \(tokenID) AND revoked_at IS NULL")
        }
        guard changed == 0 else { return }
        let exists = try await pool.queryFirst("SELECT 1 FROM admin_tokens WHERE token_id = \(tokenID)") { _ in true } ?? false
        throw SyncError(exists ? .badRequest : .notFound, exists ? "Admin token \(tokenID) is already revoked." : "There is no admin token \(tokenID).")
    }

    /// The live admin token with this digest (its last use is recorded); nil when unknown or revoked.
    package func identity(tokenDigest: [UInt8]) async throws -> AdminIdentity? {
        try await pool.queryFirst("""
            UPDATE admin_tokens SET last_used_at = now()
            WHERE token_sha256 = \(tokenDigest) AND revoked_at IS NULL
            RETURNING token_id, name
            """) { row in AdminIdentity(tokenID: try row.string(0), name: try row.string(1)) }
    }

    /// Records an admin action that is no single transaction (a prune starting) in one of its
    /// own; a change that is one writes its entry inside it (`AdminStore+Audited`).
    package func audit(_ entry: AdminAudit) async throws {
        try await pool.withTransaction { connection in try entry.write(on: connection) }
    }

    /// The newest audit entries first.
    package func auditTrail(limit: Int) async throws -> [AuditEntry] {
        try await pool.query("""
            SELECT id, at, token_id, admin_name, action, target, detail::text FROM admin_audit ORDER BY at DESC, id DESC LIMIT \(Int64(limit))
            """) { row in
            AuditEntry(id: try row.int64(0), at: try row.date(1), tokenID: try row.string(2), adminName: try row.string(3),
                       action: try row.string(4), target: try row.string(5), detail: try row.string(6))
        }
    }
}
