import Foundation
import NimbusSupport
import Testing
@testable import NimbusPush

@Suite struct ProviderTokenTests {
    @Test func tokenIsAnES256JWTWithKeyIDTeamIDAndIssuedAtVerifiedByThePublicKey() throws {
        let directory = try ScratchDirectory("nimbus-jwt")
        defer { directory.remove() }
        let key = try TestKeys.makeP256(in: directory)
        let token = try ProviderToken.make(key: APNsProviderKey(pem: key.privatePEM), keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: 1_790_000_000)

        let parts = token.jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        #expect(parts.count == 3)
        #expect(String(decoding: try #require(Base64URL.decode(parts[0])), as: UTF8.self) == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        #expect(String(decoding: try #require(Base64URL.decode(parts[1])), as: UTF8.self) == #"{"iss":"DEF123GHIJ","iat":1790000000}"#)
        #expect(try #require(Base64URL.decode(parts[2])).count == 64)
        #expect(token.issuedAt == 1_790_000_000)
        #expect(try ES256Verifier.verify(jwt: token.jwt, publicKeyPath: key.publicPath))
        #expect("\(token)" == "ProviderToken(iat: 1790000000, redacted)")

        // Another claim under the same signature, or the signature of another key, does not verify.
        let forged = parts[0] + "." + Base64URL.encode(Array(#"{"iss":"DEF123GHIJ","iat":1790000001}"#.utf8)) + "." + parts[2]
        #expect(try !ES256Verifier.verify(jwt: forged, publicKeyPath: key.publicPath))
        let other = try TestKeys.makeP256(in: directory, name: "other")
        #expect(try !ES256Verifier.verify(jwt: token.jwt, publicKeyPath: other.publicPath))
    }

    @Test func everySignatureIsRawRAndSThatVerifies() throws {
        let directory = try ScratchDirectory("nimbus-jwt")
        defer { directory.remove() }
        let key = try TestKeys.makeP256(in: directory)
        let providerKey = try APNsProviderKey(pem: key.privatePEM)
        // About one signature in 128 has an r or s with a leading zero byte; padding must keep 32 bytes.
        for second in 0..<40 {
            let token = try ProviderToken.make(key: providerKey, keyID: "K", teamID: "T", issuedAt: Int64(1_790_000_000 + second))
            #expect(try ES256Verifier.verify(jwt: token.jwt, publicKeyPath: key.publicPath))
        }
    }

    @Test func derSignaturesBecomeLeftPaddedRAndS() throws {
        // SEQUENCE { INTEGER 1, INTEGER 0x0100 }
        let raw = try APNsProviderKey.rawSignature(fromDER: [0x30, 0x07, 0x02, 0x01, 0x01, 0x02, 0x02, 0x01, 0x00])
        #expect(raw == [UInt8](repeating: 0, count: 31) + [1] + [UInt8](repeating: 0, count: 30) + [1, 0])
        #expect(throws: APNsProviderKey.SigningError.self) { try APNsProviderKey.rawSignature(fromDER: [0x30, 0x00, 0x01]) }
    }

    @Test func theCacheReusesATokenForFiftyMinutesThenAsksForANewOne() {
        var cache = ProviderTokenCache()
        let start: Int64 = 1_790_000_000_000
        #expect(cache.token(nowMilliseconds: start) == .sign(issuedAt: 1_790_000_000))
        let first = ProviderToken(jwt: "first", issuedAt: 1_790_000_000)
        cache.store(first)
        #expect(cache.token(nowMilliseconds: start + 1) == .use(first))
        #expect(cache.token(nowMilliseconds: start + (50 * 60 - 1) * 1000) == .use(first))
        #expect(cache.token(nowMilliseconds: start + 50 * 60 * 1000) == .sign(issuedAt: 1_790_000_000 + 50 * 60))
    }

    @Test func aReportedExpiryRenewsOnceHoweverManyRequestsReportIt() {
        var cache = ProviderTokenCache()
        let first = ProviderToken(jwt: "first", issuedAt: 100)
        cache.store(first)
        cache.expired("first")
        #expect(cache.token(nowMilliseconds: 101_000) == .sign(issuedAt: 101))
        let second = ProviderToken(jwt: "second", issuedAt: 101)
        cache.store(second)
        // Requests sent with the first token answer 403 after the renewal: the second one stays.
        cache.expired("first")
        #expect(cache.token(nowMilliseconds: 102_000) == .use(second))
    }

    @Test func aClockSteppedBackwardsRenewsRatherThanTrustTheAge() {
        var cache = ProviderTokenCache()
        let token = ProviderToken(jwt: "t", issuedAt: 1000)
        cache.store(token)
        #expect(cache.token(nowMilliseconds: 999_000) == .sign(issuedAt: 999))
    }

    @Test func theSourceSignsOnRenewalAndAfterAReportedExpiryOnTheClockItIsGiven() throws {
        let directory = try ScratchDirectory("nimbus-jwt")
        defer { directory.remove() }
        let key = try TestKeys.makeP256(in: directory)
        let credentials = try APNsCredentials(key: APNsProviderKey(pem: key.privatePEM), keyID: "KEY1234567", teamID: "TEAM123456")
        let clock = TestClock(milliseconds: 1_790_000_000_500)
        let source = ProviderTokenSource(credentials: credentials, clock: clock)

        let first = try source.current()
        #expect(first.issuedAt == 1_790_000_000)
        clock.advance(seconds: 49 * 60 + 59)
        #expect(try source.current() == first)
        clock.advance(seconds: 1)
        let second = try source.current()
        #expect(second.issuedAt == 1_790_000_000 + 50 * 60)
        #expect(second.jwt != first.jwt)
        #expect(try ES256Verifier.verify(jwt: second.jwt, publicKeyPath: key.publicPath))

        clock.advance(seconds: 5)
        source.expired(first)
        #expect(try source.current() == second)
        source.expired(second)
        #expect(try source.current().issuedAt == second.issuedAt + 5)
    }
}
