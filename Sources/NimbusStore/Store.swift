import Foundation
import NimbusPostgres
import NimbusSupport

/// The sync domain on PostgreSQL. All SQL of the service lives in this module.
package final class Store: Sendable {
    package let pool: PGPool

    package init(pool: PGPool) {
        self.pool = pool
    }

    /// One round trip to the database; returns its duration in seconds.
    package func ping() async throws -> Double {
        let start = monotonicNanoseconds()
        _ = try await pool.withConnection { connection in
            try connection.queryFirst("SELECT 1") { try $0.int(0) }
        }
        return Double(monotonicNanoseconds() - start) / 1e9
    }

    /// Connections in use and idle, for metrics.
    package var poolStatistics: PGPool.Statistics { pool.statistics }
}
