import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The pool as the stores use it: a database error that means "try again" or "bad input"
/// leaves the store as a `SyncError` (the API knows nothing of PostgreSQL); any other error is
/// the server's fault and leaves as it is. Its statements run as `execution` says (the
/// store's, stated by whoever asked for the store: `DatabaseBacked.on`).
struct StorePool: Sendable {
    let pool: PGPool
    var execution: Execution = .offloaded
    private static let logger = Logger(subsystem: "store")

    func withConnection<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await Self.mapping { try await pool.withConnection(on: execution, body) }
    }

    func withTransaction<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await Self.mapping { try await pool.withTransaction(on: execution, body) }
    }

    func withLease<T: Sendable>(_ body: @Sendable (PGLease) async throws -> T) async throws -> T {
        try await Self.mapping { try await pool.withLease(body) }
    }

    func query<Row: Sendable>(_ sql: SQL, decode: @escaping @Sendable (PGRow) throws -> Row) async throws -> [Row] {
        try await Self.mapping { try await pool.query(sql, on: execution, decode: decode) }
    }

    func read<T: Sendable>(_ sql: SQL, _ body: @escaping @Sendable (PGRows) throws -> T) async throws -> T {
        try await Self.mapping { try await pool.read(sql, on: execution, body) }
    }

    /// `read` with the planner's sorts off for the statement (`PGPool.readInIndexOrder`).
    func readInIndexOrder<T: Sendable>(_ sql: SQL, _ body: @escaping @Sendable (PGRows) throws -> T) async throws -> T {
        try await Self.mapping { try await pool.readInIndexOrder(sql, on: execution, body) }
    }

    func queryFirst<Row: Sendable>(_ sql: SQL, decode: @escaping @Sendable (PGRow) throws -> Row) async throws -> Row? {
        try await Self.mapping { try await pool.queryFirst(sql, on: execution, decode: decode) }
    }

    var statistics: PGPool.Statistics { pool.statistics }

    /// `error` as it leaves a store: a `SyncError` where the database error has a domain meaning.
    static func domainError(_ error: any Error) -> any Error {
        guard let pgError = error as? PGError, let mapped = pgError.asSyncError else { return error }
        logger.warning(pgError.isTransient ? "database unavailable" : "the database refused the request", ["error": "\(pgError)"])
        return mapped
    }

    private static func mapping<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw domainError(error)
        }
    }
}

extension PGError {
    /// The domain error for database errors that mean "try again" or "bad input"; nil for the
    /// rest (the server's fault).
    var asSyncError: SyncError? {
        if isTransient { return SyncError(.tryAgainLater, "The database is unavailable right now; retry shortly.", retryAfter: 1) }
        if sqlState == PGError.SQLState.serializationFailure || sqlState == PGError.SQLState.deadlockDetected {
            return SyncError(.tryAgainLater, "The request collided with another change; retry it.", retryAfter: 1)
        }
        if sqlState?.hasPrefix("22") == true {
            // Data exceptions are input the database cannot hold (a value out of range): the
            // request's fault. Validation should catch them first; this is the net below it.
            return SyncError(.badRequest, "A value in the request cannot be stored: \(message).")
        }
        return nil
    }
}
