import Dispatch

/// One pooled connection held across async work (a streamed upload's transaction). Each call
/// still runs on the lease's own serial queue, never on the cooperative pool.
package final class PGLease: Sendable {
    let connection: PGConnection
    private let queue = DispatchQueue(label: "nimbus.postgres.lease")

    init(connection: PGConnection) {
        self.connection = connection
    }

    /// Runs blocking libpq work on the leased connection.
    package func run<T: Sendable>(_ work: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        let connection = connection
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work(connection) }) }
        }
    }
}

extension PGPool {
    /// Borrows a connection for async `body`; it goes back to the pool afterwards (or is dropped
    /// when broken, or left inside a transaction).
    package func withLease<T: Sendable>(_ body: @Sendable (PGLease) async throws -> T) async throws -> T {
        let lease = try await withConnectionHeld()
        do {
            let value = try await body(PGLease(connection: lease))
            giveBack(lease, failure: nil)
            return value
        } catch {
            giveBack(lease, failure: error)
            throw error
        }
    }
}
