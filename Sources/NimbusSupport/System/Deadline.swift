/// Runs `operation` and returns its value, or nil once `seconds` have passed without one. The
/// operation is not cancelled: blocking work (a libpq connect) cannot be, so it runs on and its
/// late value is dropped. For answers that must come in time whatever the work underneath does
/// (`/healthz` while the database is unreachable).
package func valueWithin<T: Sendable>(seconds: Double, _ operation: @escaping @Sendable () async throws -> T) async throws -> T? {
    let pending = Lock<CheckedContinuation<T?, any Error>?>(nil)
    return try await withCheckedThrowingContinuation { continuation in
        pending.withLock { $0 = continuation }
        let timer = Task {
            try? await Task.sleep(nanoseconds: UInt64(max(seconds, 0) * 1e9))
            guard !Task.isCancelled else { return }
            pending.withLock { $0.take() }?.resume(returning: nil)
        }
        Task {
            let result: Result<T?, any Error>
            do {
                result = .success(try await operation())
            } catch {
                result = .failure(error)
            }
            pending.withLock { $0.take() }?.resume(with: result)
            // No timer left sleeping per answered call (a load of /healthz would pile them up).
            timer.cancel()
        }
    }
}
