import NimbusSupport

/// An APNs provider token: a JWT signed with ES256 (RFC 7515, RFC 7518 §3.4), as Apple's
/// "Establishing a token-based connection to APNs" describes:
/// `{"alg":"ES256","kid":KEY_ID}` . `{"iss":TEAM_ID,"iat":SECONDS}` . base64url(r ‖ s).
package struct ProviderToken: Sendable, Equatable, CustomStringConvertible {
    /// The compact serialisation, sent as `authorization: bearer <jwt>`.
    package var jwt: String
    /// When it was issued, in seconds since the Unix epoch (its `iat`).
    package var issuedAt: Int64

    package init(jwt: String, issuedAt: Int64) {
        self.jwt = jwt
        self.issuedAt = issuedAt
    }

    /// A bearer credential for up to an hour: described by its age, never its text.
    package var description: String { "ProviderToken(iat: \(issuedAt), redacted)" }

    /// Signs a new token with `key`.
    package static func make(key: APNsProviderKey, keyID: String, teamID: String, issuedAt: Int64) throws(APNsProviderKey.SigningError) -> ProviderToken {
        let header: JSONValue = ["alg": "ES256", "kid": .string(keyID)]
        let claims: JSONValue = ["iss": .string(teamID), "iat": .integer(issuedAt)]
        let signingInput = Base64URL.encode(header.serialized()) + "." + Base64URL.encode(claims.serialized())
        let signature = try key.signES256(Array(signingInput.utf8))
        return ProviderToken(jwt: signingInput + "." + Base64URL.encode(signature), issuedAt: issuedAt)
    }
}

/// When to sign a new provider token: a pure state machine over the time you pass in.
///
/// APNs refuses a token older than an hour (403 `ExpiredProviderToken`) and one renewed more often than
/// every 20 minutes (429 `TooManyProviderTokenUpdates`), so a token is reused until `renewAfter`
/// (50 minutes) and renewed early only when APNs reports it expired.
package struct ProviderTokenCache: Sendable {
    /// What the caller does next.
    package enum Action: Sendable, Equatable {
        /// Send with this token.
        case use(ProviderToken)
        /// Sign a token issued at this second, then hand it to `store(_:)`.
        case sign(issuedAt: Int64)
    }

    /// The age after which a token is replaced.
    package let renewAfterSeconds: Int64
    package private(set) var current: ProviderToken?

    package init(renewAfterSeconds: Int64 = 50 * 60) {
        self.renewAfterSeconds = renewAfterSeconds
    }

    /// The token to send at `nowMilliseconds` (wall clock), or the order to sign one.
    package func token(nowMilliseconds: Int64) -> Action {
        let now = nowMilliseconds / 1000
        // A clock stepped backwards makes a token "from the future"; renew rather than trust its age.
        if let current, now >= current.issuedAt, now - current.issuedAt < renewAfterSeconds {
            return .use(current)
        }
        return .sign(issuedAt: now)
    }

    /// Keeps a freshly signed token.
    package mutating func store(_ token: ProviderToken) {
        current = token
    }

    /// APNs answered 403 `ExpiredProviderToken` to `jwt`: forget it, so the next `token` signs anew.
    /// A stale report (about a token already replaced, as when concurrent requests all fail) changes
    /// nothing, so a burst of 403s renews once.
    package mutating func expired(_ jwt: String) {
        if current?.jwt == jwt {
            current = nil
        }
    }
}
