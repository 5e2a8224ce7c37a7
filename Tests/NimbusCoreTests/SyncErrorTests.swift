import NimbusCore
import Testing

@Suite struct SyncErrorTests {
    @Test func codesCarryTheirHTTPStatus() {
        #expect(SyncError.Code.badRequest.httpStatus == 400)
        #expect(SyncError.Code.authenticationRequired.httpStatus == 401)
        #expect(SyncError.Code.zoneNotFound.httpStatus == 404)
        #expect(SyncError.Code.changeTokenExpired.httpStatus == 410)
        #expect(SyncError.Code.limitExceeded.httpStatus == 413)
        #expect(SyncError.Code.throttled.httpStatus == 429)
        #expect(SyncError.Code.tryAgainLater.httpStatus == 503)
    }

    @Test func describesItselfWithCodeAndReason() {
        let error = SyncError(.conflict, "The record changed.", retryAfter: nil)
        #expect(error.description == "CONFLICT: The record changed.")
    }
}
