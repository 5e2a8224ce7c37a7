import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The audit entry of a mutation made through the admin API: who did what to which target.
/// It is written on the connection of the change's own transaction, so that both commit or
/// neither does (`AdminStore+Audited`).
package struct AdminAudit: Sendable {
    package var admin: AdminIdentity
    package var action: String
    package var target: String
    package var detail: JSONObject

    package init(_ admin: AdminIdentity, action: String, target: String, detail: JSONObject = [:]) {
        self.admin = admin
        self.action = action
        self.target = target
        self.detail = detail
    }

    /// Inserts the entry on `connection`, inside the caller's transaction.
    func write(on connection: PGConnection) throws {
        let text = String(decoding: JSONValue.object(detail).serialized(sortedKeys: true), as: UTF8.self)
        try connection.run("""
            INSERT INTO admin_audit (token_id, admin_name, action, target, detail)
            VALUES (\(admin.tokenID), \(admin.name), \(action), \(target), \(text)::jsonb)
            """)
    }
}

/// Work a store runs on its transaction's connection just before the commit (an audit entry).
typealias InTransaction = @Sendable (PGConnection) throws -> Void
