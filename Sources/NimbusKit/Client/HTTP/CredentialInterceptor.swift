import Foundation

/// Puts the device's credential on every authorized request (`Authorization: Bearer …`);
/// `replace` gives requests started from then on a new one (`Container.replaceCredential`).
final class CredentialInterceptor: HTTPInterceptor {
    private let token: Locked<String>

    init(token: String) { self.token = Locked(token) }

    var current: String { token.withLock { $0 } }

    func replace(_ newToken: String) { token.withLock { $0 = newToken } }

    func intercept(_ request: HTTPRequest, next: @Sendable (HTTPRequest) async throws -> HTTPAnswer) async throws -> HTTPAnswer {
        guard request.authorized else { return try await next(request) }
        var request = request
        request.headers["Authorization"] = "Bearer \(current)"
        return try await next(request)
    }
}
