import Dispatch
import Foundation
import NimbusSupport
import Synchronization

/// A bounded pool of connections that replaces broken ones.
///
/// Borrowers run synchronous libpq work on the pool's Dispatch queue, so async callers never block
/// the cooperative thread pool. A statement that fails because the connection broke (a restarted
/// server: `PQstatus` says OK until the first failure) discards that connection and every idle
/// one — they point at the same dead server — and throws a transient error (503 upstream); the
/// next borrower connects afresh.
package final class PGPool: Sendable {
    package struct Configuration: Sendable {
        package var url: String
        package var maxConnections: Int = 16
        package var connectTimeoutSeconds: Int = 5
        /// How long a borrower waits for a free connection before a transient error.
        package var acquireTimeoutSeconds: Double = 5
        /// What sits between the pool and PostgreSQL (`--database-pooler`).
        package var pooler: Pooler = .none

        package init(url: String) {
            self.url = url
        }
    }

    /// In-use and idle counts for metrics.
    package struct Statistics: Sendable, Hashable {
        package var inUse: Int
        package var idle: Int
        package var max: Int
        package var waiting: Int
    }

    /// A connection pooler between Nimbus and PostgreSQL.
    package enum Pooler: String, Sendable, CaseIterable {
        /// None, or one in session mode: a connection is one PostgreSQL session.
        case none
        /// Transaction mode (PgBouncer `pool_mode = transaction`): consecutive transactions of one
        /// connection may run in different sessions, so nothing is kept in the session — no named
        /// prepared statements, no session settings (the pooler's `connect_query` sets them).
        case transaction
    }

    package let configuration: Configuration
    /// Shared by every connection: turned off for good behind a transaction pooler.
    private let naming: StatementNaming
    private let state: Lock<State>
    private let queue = DispatchQueue(label: "nimbus.postgres.pool")
    /// One serial queue per connection slot, made once: blocking libpq work gets threads of its
    /// own (overcommit queues) without creating a queue per borrow.
    private let borrowerQueues: [DispatchQueue]
    private let nextBorrower = Atomic<Int>(0)
    /// Borrower queues running nothing (every borrower holds a lease, and there are as many
    /// queues as leases: one is always idle; round-robin is only the fallback).
    private let idleQueues: Lock<[Int]>
    private let logger = Logger(subsystem: "postgres")

    package init(configuration: Configuration) {
        self.configuration = configuration
        let logger = Logger(subsystem: "postgres")
        naming = StatementNaming(on: configuration.pooler == .none) {
            logger.warning("a prepared statement went missing: the database URL goes through a transaction pooler (PgBouncer?); "
                           + "named prepared statements are off from now on. Pass --database-pooler transaction, and "
                           + "--listen-database-url with a direct connection for LISTEN and locks")
        }
        state = Lock(State())
        borrowerQueues = (0..<max(configuration.maxConnections, 1)).map { DispatchQueue(label: "nimbus.postgres.borrower.\($0)") }
        idleQueues = Lock(Array(borrowerQueues.indices.reversed()))
    }

    package var statistics: Statistics {
        state.withLock { Statistics(inUse: $0.borrowed, idle: $0.idle.count, max: configuration.maxConnections, waiting: $0.waiters.count) }
    }

    /// Borrows a connection for `body`, which runs on a thread that may block: the caller's own
    /// when `execution` says it may block (`.blocking`), else a borrower queue's.
    package func withConnection<T: Sendable>(on execution: Execution = .offloaded,
                                             _ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        let lease = try await acquire()
        if execution.mayBlock {
            // The caller's thread may block: no hop to a borrower queue and back.
            let connection: PGConnection
            if let leased = lease.connection {
                connection = leased
            } else {
                do {
                    connection = try connect()
                } catch {
                    returnSlot()
                    throw error
                }
            }
            do {
                let value = try body(connection)
                release(connection, failure: nil)
                return value
            } catch {
                release(connection, failure: error)
                throw error
            }
        }
        return try await withCheckedThrowingContinuation { continuation in
            // Serial queues: their work gets threads of their own (overcommit), where a shared
            // concurrent queue would cap blocking libpq calls at the CPU count and starve the
            // async runtime, which runs on the same Dispatch pool on Linux. As many queues as
            // connections, and each borrower takes one running nothing, so borrowers never queue
            // behind each other (round-robin had put requests behind the prune's long statement).
            let index = idleQueues.withLock { $0.popLast() } ?? nextBorrower.add(1, ordering: .relaxed).newValue % borrowerQueues.count
            borrowerQueues[index].async {
                let result = Result { () throws -> T in
                    let connection: PGConnection
                    if let leased = lease.connection {
                        connection = leased
                    } else {
                        do {
                            connection = try self.connect()
                        } catch {
                            self.returnSlot()
                            throw error
                        }
                    }
                    do {
                        let value = try body(connection)
                        self.release(connection, failure: nil)
                        return value
                    } catch {
                        self.release(connection, failure: error)
                        throw error
                    }
                }
                self.idleQueues.withLock { $0.append(index) }
                continuation.resume(with: result)
            }
        }
    }

    /// Borrows a connection for `body`, whose statements wait for the server on `loop`
    /// (`PGConnection.query(_:on:decode:)`): the task suspends instead of blocking a thread.
    package func withConnection<T>(on loop: any LoopContext, _ body: (PGConnection) async throws -> T) async throws -> T {
        let connection = try await withConnectionHeld()
        do {
            let value = try await body(connection)
            release(connection, failure: nil)
            return value
        } catch {
            release(connection, failure: error)
            throw error
        }
    }

    /// One statement's rows, run as `execution` says: waiting on the caller's event loop
    /// (`.onLoop`: no thread hop), inline (`.blocking`), or on a borrower queue (`.offloaded`).
    package func query<Row: Sendable>(_ sql: SQL, on execution: Execution = .offloaded,
                                      decode: @escaping @Sendable (PGRow) throws -> Row) async throws -> [Row] {
        if let loop = execution.currentLoop {
            return try await withConnection(on: loop) { try await $0.query(sql, on: loop, decode: decode) }
        }
        return try await withConnection(on: execution) { try $0.query(sql, decode: decode) }
    }

    /// One statement's whole result, read by `body` in one pass, run as `query`.
    package func read<T: Sendable>(_ sql: SQL, on execution: Execution = .offloaded,
                                   _ body: @escaping @Sendable (PGRows) throws -> T) async throws -> T {
        if let loop = execution.currentLoop {
            return try await withConnection(on: loop) { try await $0.read(sql, on: loop, body) }
        }
        return try await withConnection(on: execution) { try $0.read(sql, body) }
    }

    /// One statement's first row, run as `query`.
    package func queryFirst<Row: Sendable>(_ sql: SQL, on execution: Execution = .offloaded,
                                           decode: @escaping @Sendable (PGRow) throws -> Row) async throws -> Row? {
        if let loop = execution.currentLoop {
            return try await withConnection(on: loop) { try await $0.queryFirst(sql, on: loop, decode: decode) }
        }
        return try await withConnection(on: execution) { try $0.queryFirst(sql, decode: decode) }
    }

    /// A connection taken out of the pool until `giveBack` (for `withLease`).
    func withConnectionHeld() async throws -> PGConnection {
        let lease = try await acquire()
        if let connection = lease.connection { return connection }
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue(label: "nimbus.postgres.connect").async {
                do {
                    continuation.resume(returning: try self.connect())
                } catch {
                    self.returnSlot()
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    func giveBack(_ connection: PGConnection, failure: (any Error)?) {
        release(connection, failure: failure)
    }

    /// Borrows a connection and runs `body` in a transaction on it (where: as `withConnection`).
    package func withTransaction<T: Sendable>(on execution: Execution = .offloaded,
                                              _ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await withConnection(on: execution) { connection in
            try connection.withTransaction(body)
        }
    }

    /// Closes idle connections and fails waiting borrowers; in-use connections close when returned.
    package func close() {
        let (idle, waiters) = state.withLock { state in
            state.closed = true
            defer { state.idle.removeAll(); state.waiters.removeAll() }
            return (state.idle, state.waiters)
        }
        _ = idle  // released here: deinit finishes each PGconn
        for waiter in waiters {
            waiter.continuation.resume(throwing: PGError(.poolClosed, "the database pool is shutting down"))
        }
    }

    // MARK: - Leasing

    /// A connection to use, or nil for a reserved slot in which the borrower connects itself.
    private struct Lease: Sendable {
        var connection: PGConnection?
    }

    private struct Waiter {
        /// When it gives up (monotonic nanoseconds).
        var deadline: UInt64
        var continuation: CheckedContinuation<Lease, any Error>
    }

    private struct State {
        var idle: [PGConnection] = []
        /// Connections out with borrowers plus slots reserved for connecting.
        var borrowed = 0
        /// In arrival order, hence in deadline order.
        var waiters: [Waiter] = []
        /// Whether `sweepWaiters` is due to run (while anyone waits).
        var sweepScheduled = false
        var closed = false
    }

    private enum Grant {
        case lease(Lease)
        /// Queued; the sweep is to be scheduled (after that many nanoseconds) unless nil.
        case wait(sweepAfter: UInt64?)
        case closed
    }

    private func acquire() async throws -> Lease {
        let max = configuration.maxConnections
        let timeoutNanoseconds = UInt64(Swift.max(configuration.acquireTimeoutSeconds, 0) * 1e9)
        return try await withCheckedThrowingContinuation { continuation in
            let grant: Grant = state.withLock { state in
                if state.closed { return .closed }
                if let connection = state.idle.popLast() {
                    state.borrowed += 1
                    return .lease(Lease(connection: connection))
                }
                if state.borrowed < max {
                    state.borrowed += 1
                    return .lease(Lease(connection: nil))
                }
                state.waiters.append(Waiter(deadline: monotonicNanoseconds() + timeoutNanoseconds, continuation: continuation))
                if state.sweepScheduled { return .wait(sweepAfter: nil) }
                state.sweepScheduled = true
                return .wait(sweepAfter: timeoutNanoseconds)
            }
            switch grant {
            case .lease(let lease):
                continuation.resume(returning: lease)
            case .closed:
                continuation.resume(throwing: PGError(.poolClosed, "the database pool is shutting down"))
            case .wait(let sweepAfter):
                if let sweepAfter { scheduleSweep(afterNanoseconds: sweepAfter) }
            }
        }
    }

    /// Fails the waiters whose time is up, then sleeps until the next one's deadline, if any.
    /// One timer for all waiters (not one per wait: under load each had cost a timer and a
    /// thread's wake-up twice); waiters share one timeout and queue in arrival order, so the
    /// overdue ones are always the first.
    private func sweepWaiters() {
        let now = monotonicNanoseconds()
        let (expired, next) = state.withLock { state -> ([Waiter], UInt64?) in
            var expired: [Waiter] = []
            while let first = state.waiters.first, first.deadline <= now {
                expired.append(state.waiters.removeFirst())
            }
            guard let first = state.waiters.first else {
                state.sweepScheduled = false
                return (expired, nil)
            }
            return (expired, first.deadline - now)
        }
        let timeout = configuration.acquireTimeoutSeconds
        for waiter in expired {
            waiter.continuation.resume(throwing: PGError(.poolTimeout, "no database connection became free within \(timeout) seconds"))
        }
        if let next { scheduleSweep(afterNanoseconds: next) }
    }

    private func scheduleSweep(afterNanoseconds delay: UInt64) {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(min(delay, UInt64(Int.max))))) { [self] in sweepWaiters() }
    }

    private func connect() throws -> PGConnection {
        let connection = try PGConnection.connect(url: configuration.url, connectTimeoutSeconds: configuration.connectTimeoutSeconds,
                                                  naming: naming)
        // Behind a transaction pooler a SET would change whichever session ran it, for its next
        // users too, and not this connection's next transaction: the pooler's connect_query sets them.
        guard configuration.pooler == .none else { return connection }
        // Prepared statements are planned once: without this, PostgreSQL keeps re-planning
        // statements with array parameters (custom plans look cheaper than its generic guess).
        // This applies to unnamed (unprepared) statements as well: whatever must shape a plan
        // (an expression index's key, a partial index's record type, a LIMIT) is written as a
        // constant (SQL's `\(name:)`, `\(constant:)`), never left to a parameter's value.
        try connection.run("SET plan_cache_mode = force_generic_plan")
        // Short OLTP statements gain nothing from JIT, and on large tables its cost estimate
        // triggers compilation that costs far more than the query (pruner batches: ~9x).
        try connection.run("SET jit = off")
        return connection
    }

    /// Returns a connection after use. A broken one is dropped — with every idle one when the
    /// failure says the server went away — and its slot passes to a waiter, who reconnects.
    private func release(_ connection: PGConnection, failure: (any Error)?) {
        // A connection left inside a transaction (a borrower that threw after BEGIN) is not
        // reusable either: drop it rather than hand the open transaction to the next borrower.
        // A standby's refusal or an admin shutdown means the same as a lost connection: the
        // server behind the URL changed (a failover), so no idle connection to it is kept either.
        let lost = (failure as? PGError)?.meansServerGone == true || connection.isBroken
        let reusableConnection = !lost && !connection.isInTransaction
        var discarded: [PGConnection] = []
        let handoff: (Waiter, Lease)? = state.withLock { state in
            if lost {
                discarded = state.idle
                state.idle.removeAll()
            }
            let reusable = reusableConnection && !state.closed
            if !state.waiters.isEmpty {
                let waiter = state.waiters.removeFirst()
                return (waiter, Lease(connection: reusable ? connection : nil))
            }
            state.borrowed -= 1
            if reusable { state.idle.append(connection) }
            return nil
        }
        if lost {
            logger.warning("dropped a broken database connection", ["idleDropped": discarded.count, "error": "\(failure.map { "\($0)" } ?? "closed")"])
        }
        discarded.removeAll()
        if let (waiter, lease) = handoff {
            waiter.continuation.resume(returning: lease)
        }
    }

    /// A borrower whose connect failed returns its reserved slot (to a waiter, who tries again).
    private func returnSlot() {
        let waiter: Waiter? = state.withLock { state in
            if !state.waiters.isEmpty { return state.waiters.removeFirst() }
            state.borrowed -= 1
            return nil
        }
        waiter?.continuation.resume(returning: Lease(connection: nil))
    }
}
