import Foundation
import NimbusWire

/// Sends a request again when the server said it did not take it and to come back soon: a 503
/// (`TRY_AGAIN_LATER`: the database is unreachable or the server is stopping, nothing was written;
/// or a proxy's 503 while the server restarts). Waits as `Backoff` says, never less than the
/// answer's `retryAfter` (header or body). A wait longer than `longestWait`, or more than
/// `maxRetries` tries, hands the answer to the caller: the sync engine spaces its own retries.
/// A 429 (`THROTTLED`) goes to the caller at once: pacing a device's requests is the caller's,
/// and no answer at all (`networkFailure`) is never resent here (the request may have been taken).
struct RetryInterceptor: HTTPInterceptor {
    var statuses: Set<Int> = [503]
    var maxRetries = 2
    var longestWait: TimeInterval = 5
    var backoff = Backoff(base: 0.2, cap: 2)
    var sleep: @Sendable (TimeInterval) async throws -> Void = { seconds in
        try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
    }

    func intercept(_ request: HTTPRequest, next: @Sendable (HTTPRequest) async throws -> HTTPAnswer) async throws -> HTTPAnswer {
        var backoff = self.backoff
        var retries = 0
        while true {
            let answer = try await next(request)
            guard statuses.contains(answer.status), retries < maxRetries else { return answer }
            let retryAfter = RetryInterceptor.retryAfter(answer)
            guard (retryAfter ?? 0) <= longestWait else { return answer }
            try await sleep(backoff.nextDelay(retryAfter: retryAfter))
            retries += 1
        }
    }

    /// The answer's `Retry-After` header, else its error body's `retryAfter`, in seconds.
    static func retryAfter(_ answer: HTTPAnswer) -> TimeInterval? {
        if let header = answer.header("Retry-After").flatMap(TimeInterval.init) { return header }
        return (try? JSONValue.parse(answer.body))?["retryAfter"]?.doubleValue
    }
}
