import Testing
@testable import NimbusRelay

/// The replay window and the rate limit, pure.
@Suite struct RelayLimitsTests {
    @Test func theReplayWindowAdmitsANonceOnceAndOnlyWithinTheWindow() {
        var window = ReplayWindow(windowSeconds: 300)
        #expect(window.admit(installationID: "a", nonce: "n1", timestamp: 1000, nowSeconds: 1000) == .fresh)
        #expect(window.admit(installationID: "a", nonce: "n1", timestamp: 1000, nowSeconds: 1001) == .replayed)
        // The same nonce from another installation is its own.
        #expect(window.admit(installationID: "b", nonce: "n1", timestamp: 1000, nowSeconds: 1001) == .fresh)
        #expect(window.admit(installationID: "a", nonce: "n2", timestamp: 700, nowSeconds: 1000) == .fresh)
        #expect(window.admit(installationID: "a", nonce: "n3", timestamp: 699, nowSeconds: 1000) == .stale(skewSeconds: -301))
        #expect(window.admit(installationID: "a", nonce: "n4", timestamp: 1301, nowSeconds: 1000) == .stale(skewSeconds: 301))
        // Once the request could no longer be fresh, its nonce is forgotten (and a replay is stale anyway).
        #expect(window.admit(installationID: "a", nonce: "n1", timestamp: 1000, nowSeconds: 1301) == .stale(skewSeconds: -301))
    }

    @Test func theReplayWindowForgetsExpiredNonces() {
        var window = ReplayWindow(windowSeconds: 10)
        for index in 0..<2000 {
            _ = window.admit(installationID: "a", nonce: "n\(index)", timestamp: Int64(index), nowSeconds: Int64(index))
        }
        #expect(window.count < 1100)
    }

    @Test func theRateLimitIsABucketOfPerMinuteRefilledOverAMinute() {
        var limiter = InstallationRateLimiter(perMinute: 60)
        for _ in 0..<60 { #expect(limiter.take(installationID: "a", nowMilliseconds: 0) == .allowed) }
        #expect(limiter.take(installationID: "a", nowMilliseconds: 0) == .refused(retryAfterSeconds: 1))
        #expect(limiter.take(installationID: "b", nowMilliseconds: 0) == .allowed)
        #expect(limiter.take(installationID: "a", nowMilliseconds: 1000) == .allowed)
        #expect(limiter.take(installationID: "a", nowMilliseconds: 1000) == .refused(retryAfterSeconds: 1))
        var slow = InstallationRateLimiter(perMinute: 2)
        #expect(slow.take(installationID: "a", nowMilliseconds: 0) == .allowed)
        #expect(slow.take(installationID: "a", nowMilliseconds: 0) == .allowed)
        #expect(slow.take(installationID: "a", nowMilliseconds: 0) == .refused(retryAfterSeconds: 30))
    }
}
