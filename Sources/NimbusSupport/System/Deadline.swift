/// Runs `operation` and returns its value, or nil once `seconds` have passed without one. The
/// operation is not cancelled: blocking work (a libpq connect) cannot be, so it runs on and its
/// late value is dropped. For answers that must come in time whatever the work underneath does
/// (`/healthz` while the database is unreachable).
package func valueWithin<T: Sendable>(seconds: Double, _ operation: @escaping @Sendable () async throws -> T) async throws -> T? {
    let pending = Lock<CheckedContinuation<T?, any Error>?>(nil)
    return try await withCheckedThrowingContinuation { continuation in
        pending.withLock { $0 = continuation }
        Task {
            let result: Result<T?, any Error>
            do {
                result = .success(try await operation())
            } catch {
                result = .failure(error)
            }
            pending.withLock { $0.take() }?.resume(with: result)
        }
        Task {
            try? await Task.sleep(nanoseconds: UInt64(max(seconds, 0) * 1e9))
            pending.withLock { $0.take() }?.resume(returning: nil)
        }
    }
}
