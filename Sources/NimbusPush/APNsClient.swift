import Foundation
import NimbusSupport

/// Sends notifications to APNs over HTTP/2 with TLS, one connection per host, concurrent requests
/// multiplexed on it (libcurl's multi interface on one thread of its own, `CurlDriver`).
///
/// `send` may be called from any number of tasks at once. Every HTTP answer is an `APNsResponse`,
/// error statuses included; only "no answer" throws (`APNsClientError`). A request is bounded by
/// `Configuration.requestTimeoutMilliseconds`; task cancellation does not interrupt it.
package final class APNsClient: Sendable {
    /// Why a client could not be made, as a sentence saying which setting.
    package struct StartError: Error, Sendable, Equatable, CustomStringConvertible {
        package var description: String
    }

    package let configuration: Configuration
    private let tokens: ProviderTokenSource
    private let driver: CurlDriver

    /// A client signing its own provider tokens with `credentials` (renewed after 50 minutes by `clock`).
    package convenience init(credentials: APNsCredentials, configuration: Configuration = Configuration(), clock: any WallClock = SystemClock()) throws(StartError) {
        try self.init(tokens: ProviderTokenSource(credentials: credentials, clock: clock), configuration: configuration)
    }

    package init(tokens: ProviderTokenSource, configuration: Configuration) throws(StartError) {
        if let problem = configuration.problem { throw StartError(description: problem) }
        self.configuration = configuration
        self.tokens = tokens
        self.driver = try CurlDriver(maxConcurrentStreams: configuration.maxConcurrentStreams)
    }

    deinit {
        driver.stop(timeout: nil)
    }

    /// Stops the driver thread; requests still in flight fail with `.shutDown`. Waits at most 5 s.
    package func shutdown() {
        driver.stop(timeout: .seconds(5))
    }

    /// libcurl's version, TLS library and nghttp2, for the start-up log.
    package static var libraryDescription: String { Curl.versionDescription }

    /// Sends `request` and returns APNs' answer. On 403 `ExpiredProviderToken` the provider token is
    /// renewed and the request sent once more (same `apns-id`); the second answer is returned.
    ///
    /// Throws `APNsClientError`: `.connection` when no answer came (retry with backoff),
    /// `.invalidRequest`, `.signing`, `.shutDown`.
    package func send(_ request: APNsRequest) async throws -> APNsResponse {
        if let reason = request.invalidReason { throw APNsClientError.invalidRequest(reason) }
        let token = try currentToken()
        let response = try await perform(request, token: token)
        guard response.status == 403, response.reason == .expiredProviderToken else { return response }
        tokens.expired(token)
        return try await perform(request, token: try currentToken())
    }

    private func currentToken() throws(APNsClientError) -> ProviderToken {
        do {
            return try tokens.current()
        } catch {
            throw .signing(error.description)
        }
    }

    private func perform(_ request: APNsRequest, token: ProviderToken) async throws -> APNsResponse {
        let url = configuration.baseURL(for: request.environment) + "/3/device/" + request.deviceToken
        let transfer = try CurlTransfer(request: request, url: url, bearer: token.jwt, configuration: configuration)
        return try await withCheckedThrowingContinuation { continuation in
            transfer.attach(continuation)
            if !driver.submit(transfer) {
                transfer.finish(.failure(.shutDown))
            }
        }
    }
}
