import Foundation
import NimbusAPI
import NimbusCore
import NimbusHTTP
import NimbusPostgres
import NimbusStore
import NimbusSupport
import Testing

@Suite struct ErrorResponseTests {
    func object(_ response: HTTPResponse) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    @Test func requestErrorsHaveTheAPIShape() throws {
        let response = ErrorResponse.make(SyncError(.zoneNotFound, "No zone named x."))
        #expect(response.status.code == 404)
        let body = try object(response)
        #expect(body["serverErrorCode"] as? String == "ZONE_NOT_FOUND")
        #expect(body["reason"] as? String == "No zone named x.")
        #expect((body["uuid"] as? String)?.count == 36)
        #expect(body["retryAfter"] == nil)
    }

    @Test func retryableErrorsCarryRetryAfterInBodyAndHeader() throws {
        let response = ErrorResponse.make(SyncError(.throttled, "Slow down.", retryAfter: 3))
        #expect(response.status.code == 429)
        #expect(response.headers["Retry-After"] == "3")
        #expect(try object(response)["retryAfter"] as? Int == 3)
    }

    @Test func authenticationErrorsChallengeWithBearer() {
        let response = ErrorResponse.make(SyncError(.authenticationFailed, "Unknown token."))
        #expect(response.headers["WWW-Authenticate"] == "Bearer error=\"invalid_token\"")
    }

    /// The store maps the database error at its boundary; the API answers the domain error.
    @Test func unreachableDatabaseIs503TryAgainLater() async throws {
        var configuration = PGPool.Configuration(url: "postgresql:///nimbus-test?host=/nonexistent-socket-dir")
        configuration.connectTimeoutSeconds = 1
        let store = Store(pool: PGPool(configuration: configuration), signer: TokenSigner(key: Array(repeating: 7, count: 32)),
                          clock: SystemClock(), hub: ChangeHub())
        let session = Session(userID: 1, userRecordName: "_u", tokenID: "t", deviceID: "d", databaseID: 1,
                              container: "iCloud.test", environment: .development)
        var thrown: (any Error)?
        do { _ = try await store.zones.listZones(session) } catch { thrown = error }
        let error = try #require(thrown)
        #expect((error as? SyncError)?.code == .tryAgainLater)
        let response = ErrorResponse.make(for: error, logger: Logger(subsystem: "test"))
        #expect(response.status.code == 503)
        #expect(response.headers["Retry-After"] == "1")
        #expect(try object(response)["serverErrorCode"] as? String == "TRY_AGAIN_LATER")
    }

    @Test func unknownErrorsAre500WithAnIdAndNoDetails() throws {
        struct Secret: Error {}
        let response = ErrorResponse.make(for: Secret(), logger: Logger(subsystem: "test"))
        #expect(response.status.code == 500)
        let body = try object(response)
        #expect(body["serverErrorCode"] as? String == "INTERNAL_ERROR")
        #expect(!(body["reason"] as? String ?? "").contains("Secret"))
        #expect((body["reason"] as? String ?? "").contains(body["uuid"] as? String ?? "missing"))
    }

    @Test func httpCoreErrorsUseBadRequestExcept413() throws {
        let tooLarge = ErrorResponse.forHTTPCore(.contentTooLarge, "Too big.")
        #expect(tooLarge.status.code == 413)
        #expect(try object(tooLarge)["serverErrorCode"] as? String == "LIMIT_EXCEEDED")
        for status in [HTTPStatus.badRequest, .requestTimeout, .uriTooLong, .requestHeaderFieldsTooLarge, .notImplemented, .httpVersionNotSupported] {
            let response = ErrorResponse.forHTTPCore(status, "Bad.")
            #expect(response.status == status)
            #expect(try object(response)["serverErrorCode"] as? String == "BAD_REQUEST")
        }
    }
}
