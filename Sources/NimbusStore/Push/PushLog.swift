import NimbusPostgres
import NimbusSupport

/// SQL fragments the push statements share.
enum PushSQL {
    /// A `timestamptz` from milliseconds since 1970 (the store's clock, so tests can move it).
    static func time(_ milliseconds: Int64) -> SQL {
        "('epoch'::timestamptz + \(milliseconds) * interval '1 millisecond')"
    }
}

/// The per-device delivery log's retention.
struct PushLog: DatabaseBacked {
    let database: Database
    var execution: Execution = .offloaded

    /// Deletes entries older than `cutoff` (milliseconds since 1970), of one container when given.
    func prune(olderThan cutoff: Int64, container: String?) async throws -> Int {
        try await pool.withConnection { connection in
            var statement: SQL = "DELETE FROM push_log WHERE at < \(PushSQL.time(cutoff))"
            if let container { statement.append(" AND container = \(container)") }
            return try connection.run(statement)
        }
    }

    /// Deletes long-poll marks (`push_long_polls`) that ended before `cutoff`: those of removed
    /// registrations, and of devices that stopped polling.
    func removeEndedLongPolls(before cutoff: Int64) async throws -> Int {
        try await pool.withConnection { connection in
            try connection.run("DELETE FROM push_long_polls WHERE until < \(PushSQL.time(cutoff))")
        }
    }

    /// Deletes registrations of revoked device tokens: a binary before migration 0015 revoked them
    /// without removing their registrations (unused meanwhile: the outbox joins live tokens).
    func removeRevokedRegistrations() async throws -> Int {
        try await pool.withConnection { connection in
            try connection.run("""
                DELETE FROM push_registrations r USING device_tokens t
                WHERE t.token_id = r.device_token_id AND t.revoked_at IS NOT NULL
                """)
        }
    }
}

extension Pruner {
    var pushLog: PushLog { PushLog(database: database, execution: execution) }
}
