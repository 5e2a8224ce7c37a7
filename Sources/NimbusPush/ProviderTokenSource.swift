import NimbusSupport

/// The provider token to send now: a `ProviderTokenCache` behind a lock, signing when it says so.
/// Safe to call from any thread; a renewal signs under the lock (tens of microseconds, once in 50 minutes).
package final class ProviderTokenSource: Sendable {
    private let credentials: APNsCredentials
    private let clock: any WallClock
    private let cache: Lock<ProviderTokenCache>

    package init(credentials: APNsCredentials, clock: any WallClock = SystemClock(), renewAfterSeconds: Int64 = 50 * 60) {
        self.credentials = credentials
        self.clock = clock
        self.cache = Lock(ProviderTokenCache(renewAfterSeconds: renewAfterSeconds))
    }

    /// The current token, signing a new one when the cached one is due for renewal or was reported expired.
    package func current() throws(APNsProviderKey.SigningError) -> ProviderToken {
        let now = clock.nowMilliseconds()
        return try cache.withLock { cache throws(APNsProviderKey.SigningError) -> ProviderToken in
            switch cache.token(nowMilliseconds: now) {
            case .use(let token):
                return token
            case .sign(let issuedAt):
                let token = try ProviderToken.make(key: credentials.key, keyID: credentials.keyID, teamID: credentials.teamID, issuedAt: issuedAt)
                cache.store(token)
                return token
            }
        }
    }

    /// APNs answered 403 `ExpiredProviderToken` to a request carrying `token`.
    package func expired(_ token: ProviderToken) {
        cache.withLock { $0.expired(token.jwt) }
    }
}
