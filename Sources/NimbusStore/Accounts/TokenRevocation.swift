import NimbusPostgres

/// Revoking a device token ends its parked long-polls at once, on every instance
/// (docs/scaling.md "How wake-ups travel"). Every way of revoking goes through here.
extension DatabaseBacked {
    /// Runs `update` (an `UPDATE device_tokens … RETURNING token_id`) in one statement with a
    /// `pg_notify` on `ChangeHub.revocationChannel` per revoked id — delivered to every instance's
    /// LISTEN connection when the revocation commits — then answers this instance's waiters of
    /// those tokens without waiting for its own notice. The tokens' push registrations (and their
    /// queued pushes) go in the same transaction. Returns the ids the update returned.
    /// `alongside` (the admin audit's entry) runs in the same transaction when a token was revoked:
    /// if it fails, nothing is revoked and no notice is sent.
    func revokeTokens(_ update: SQL, alongside: InTransaction? = nil) async throws -> [String] {
        let revoked = try await pool.withTransaction { connection in
            let revoked = try connection.query("""
                WITH revoked AS (\(update))
                SELECT token_id, pg_notify(\(ChangeHub.revocationChannel), token_id)::text FROM revoked
                """) { try $0.string(0) }
            // A statement of its own: its snapshot, taken after the UPDATE got the tokens' row locks,
            // sees a registration that committed while the UPDATE waited for them.
            try PushRegistrationStore.removeRegistrations(connection, tokenIDs: revoked)
            if !revoked.isEmpty { try alongside?(connection) }
            return revoked
        }
        for tokenID in revoked { hub.revoke(tokenID: tokenID) }
        return revoked
    }
}

extension Store {
    /// After the LISTEN connection was re-established, revocation notices may have been missed:
    /// one statement finds the revoked tokens among those with parked requests, and their
    /// requests are answered (the check before each delivery keeps data from them meanwhile).
    package func answerMissedRevocations() async throws {
        let parked = hub.parkedTokenIDs
        guard !parked.isEmpty else { return }
        let revoked = try await pool.query("""
            SELECT token_id FROM device_tokens
            WHERE token_id = ANY(\(PGData.textArray(Array(parked)))) AND revoked_at IS NOT NULL
            """) { try $0.string(0) }
        for tokenID in revoked { hub.revoke(tokenID: tokenID) }
    }
}
