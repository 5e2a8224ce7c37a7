extension APNsResponse {
    /// What the sender does with a push after this answer (docs/api.md § Push to sleeping devices).
    package enum Disposition: Sendable, Equatable {
        /// 200: done.
        case delivered
        /// 410 `Unregistered`, 400 `BadDeviceToken` / `DeviceTokenNotForTopic`: the device token is dead
        /// for this app; remove the registration.
        case removeRegistration
        /// 429, 5xx, and 403 `ExpiredProviderToken` (the client already renewed and resent once, so a
        /// second one means a wrong clock or a revoked key): try again with backoff, never sooner than
        /// `retryAfterSeconds`, until the push expires.
        case retry(retryAfterSeconds: Int?)
        /// Any other answer (a payload APNs refuses, a topic it disallows, a key it rejects): give up.
        case giveUp
    }

    /// The contract's rule for this answer. A failure with no answer (`APNsClientError.connection`) is
    /// retried like `.retry(retryAfterSeconds: nil)`.
    package var disposition: Disposition {
        switch status {
        case 200:
            return .delivered
        case 410:
            return .removeRegistration
        case 400 where reason == .badDeviceToken || reason == .deviceTokenNotForTopic:
            return .removeRegistration
        case 403 where reason == .expiredProviderToken, 429, 500...599:
            return .retry(retryAfterSeconds: retryAfterSeconds)
        default:
            return .giveUp
        }
    }
}
