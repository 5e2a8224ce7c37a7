import NimbusCore
import NimbusPostgres

/// How a request's `Session` was established: looked up in the database for this request, or
/// taken from this instance's cache (`AccountStore.cachedSession`) without asking it. A cached
/// session is only as good as its bearer token, so whatever starts from one checks the token:
/// inside its own statement (`liveTokenCheck`), or by looking it up again first (`AccountStore.verify`).
package enum SessionProof: Sendable, Hashable {
    /// Looked up in the database for this request: the token was live.
    case verified
    /// From the cache, unchecked: the SHA-256 of the request's bearer token, to be checked.
    case cached(tokenDigest: [UInt8])

    /// The digest still to be checked; nil when the session is verified.
    package var uncheckedTokenDigest: [UInt8]? {
        if case .cached(let digest) = self { digest } else { nil }
    }

    /// For a cached session, the condition a statement adds so that it finds nothing unless the
    /// token is still the session's and not revoked; nil when the session is verified. With it a
    /// revocation takes effect on the next request.
    func liveTokenCheck(tokenID: String) -> SQL? {
        guard case .cached(let digest) = self else { return nil }
        return "EXISTS (SELECT 1 FROM device_tokens WHERE token_sha256 = \(digest) AND token_id = \(tokenID) AND revoked_at IS NULL)"
    }
}

extension AccountStore {
    /// `session` itself when `proof` says it is verified; otherwise its token looked up again
    /// (AUTHENTICATION_FAILED when it is unknown or revoked by now).
    package func verify(_ session: Session, proof: SessionProof) async throws -> Session {
        guard case .cached(let digest) = proof else { return session }
        guard let verified = try await self.session(tokenDigest: digest, container: session.container, environment: session.environment) else {
            throw SyncError(.authenticationFailed, "The bearer token is unknown or revoked.")
        }
        return verified
    }
}
