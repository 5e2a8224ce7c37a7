import Foundation
import NimbusPostgres
import Synchronization
import Testing

@Suite(.timeLimit(.minutes(1))) struct PGPoolTests {
    private func makePool(_ database: TestDatabase, max: Int, acquireTimeout: Double = 5) -> PGPool {
        var configuration = PGPool.Configuration(url: database.url)
        configuration.maxConnections = max
        configuration.acquireTimeoutSeconds = acquireTimeout
        configuration.connectTimeoutSeconds = 5
        return PGPool(configuration: configuration)
    }

    @Test func tenConcurrentBorrowersShareTwoConnections() async throws {
        try await TestDatabase.with { database in
            // What is checked is the sharing, not the speed: a waiter's 30 s cannot run out
            // behind eight holds of ~0.1 s however busy the machine (5 s once did, in CI).
            let pool = makePool(database, max: 2, acquireTimeout: 30)
            defer { pool.close() }
            let backendsSeen = Recorder<Int>()
            let inUseSeen = Recorder<Int>()
            let sampling = Task {
                while !Task.isCancelled {
                    inUseSeen.append(pool.statistics.inUse)
                    try? await Task.sleep(for: .milliseconds(5))
                }
            }
            let results = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        try await pool.withConnection { connection in
                            // Count this database's pool backends while holding one of them.
                            let backends = try connection.queryFirst("""
                                SELECT count(*) FROM pg_stat_activity
                                WHERE datname = current_database() AND application_name = 'nimbus'
                                """) { try $0.int(0) }!
                            backendsSeen.append(backends)
                            try connection.run("SELECT pg_sleep(0.1)")
                            return try connection.queryFirst("SELECT \(index)") { try $0.int(0) }!
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            sampling.cancel()
            _ = await sampling.value
            #expect(results.sorted() == Array(0..<10))
            #expect(backendsSeen.all.count == 10)
            #expect(backendsSeen.all.allSatisfy { (1...2).contains($0) }, "backends seen: \(backendsSeen.all)")
            #expect(inUseSeen.all.allSatisfy { $0 <= 2 }, "max inUse \(inUseSeen.all.max() ?? -1)")
            let statistics = pool.statistics
            #expect(statistics.inUse == 0)
            #expect(statistics.waiting == 0)
            #expect(statistics.idle <= 2 && statistics.idle >= 1)
            #expect(statistics.max == 2)
            // The pool keeps its connections open for reuse, and never more than two.
            #expect(try await database.backendCount(applicationName: "nimbus") == statistics.idle)
        }
    }

    /// maxConnections borrowers run at once: their blocking libpq calls must not be throttled to
    /// the number of CPUs (libdispatch's width for a concurrent queue on Linux, which then adds a
    /// thread only about once a second). Each borrower waits, up to 1.5 s, for all eight to be inside.
    @Test func borrowersRunInParallelUpToMaxConnections() async throws {
        try await TestDatabase.with { database in
            let pool = makePool(database, max: 8)
            defer { pool.close() }
            let inside = Recorder<Bool>()
            let seenTogether = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await pool.withConnection { connection in
                            try connection.run("SELECT 1")
                            inside.append(true)
                            let deadline = Date().addingTimeInterval(1.5)
                            while inside.all.count < 8, Date() < deadline { usleep(5_000) }  // on the pool's threads
                            return inside.all.count
                        }
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(seenTogether.min() == 8, "borrowers inside at once, as each saw it: \(seenTogether.sorted())")
        }
    }

    /// Holds the pool's only connection until `release()`: the borrower's body blocks on the
    /// pool's Dispatch queue, never on the cooperative pool.
    private final class Holder: Sendable {
        let holding = Recorder<Bool>()
        private let gate = DispatchSemaphore(value: 0)
        let task: Task<Void, any Error>

        init(_ pool: PGPool) {
            let holding = self.holding, gate = self.gate
            task = Task {
                try await pool.withConnection { connection in
                    try connection.run("SELECT 1")
                    holding.append(true)
                    _ = gate.wait(timeout: .now() + 20)
                }
            }
        }

        func waitUntilHolding() async -> Bool { await holding.waitFor(within: 10) { $0 } != nil }
        func release() async throws {
            gate.signal()
            try await task.value
        }
    }

    @Test func aBorrowerThatCannotGetAConnectionInTimeGetsPoolTimeout() async throws {
        try await TestDatabase.with { database in
            let pool = makePool(database, max: 1, acquireTimeout: 0.5)
            defer { pool.close() }
            let holder = Holder(pool)
            try #require(await holder.waitUntilHolding(), "the first borrower got the connection")
            #expect(pool.statistics.inUse == 1)
            var error: PGError?
            let seconds = await elapsedSeconds {
                error = await #expect(throws: PGError.self) {
                    try await pool.withConnection { connection in try connection.run("SELECT 1") }
                }
            }
            #expect(error?.kind == .poolTimeout)
            #expect(error?.isTransient == true)
            // Well before the holder lets go (up to 20 s): the waiter gave up on its own timer.
            #expect(seconds >= 0.45 && seconds < 30, "gave up after \(seconds) s, acquire timeout 0.5 s")
            #expect(pool.statistics.waiting == 0)
            try await holder.release()
            // The timed-out waiter left no trace: the next borrower gets the connection.
            let one = try await pool.withConnection { connection in try connection.queryFirst("SELECT 1") { try $0.int(0) } }
            #expect(one == 1)
            #expect(pool.statistics.inUse == 0)
        }
    }

    /// One timer serves every waiter: each still gets its own full timeout, counted from when it
    /// started waiting, and a waiter served in time is not failed by a sweep that was due for it.
    @Test func waitersArrivingApartEachGiveUpAfterTheirOwnTimeout() async throws {
        try await TestDatabase.with { database in
            let pool = makePool(database, max: 1, acquireTimeout: 0.6)
            defer { pool.close() }
            let holder = Holder(pool)
            try #require(await holder.waitUntilHolding(), "the first borrower got the connection")
            let waitedSeconds = Recorder<Double>()
            let kinds = Recorder<PGError.Kind>()
            let waiters = (0..<3).map { index in
                Task {
                    try? await Task.sleep(for: .milliseconds(250 * index))
                    let seconds = await elapsedSeconds {
                        do {
                            _ = try await pool.withConnection { connection in try connection.run("SELECT 1") }
                        } catch let error as PGError {
                            kinds.append(error.kind)
                        } catch {}
                    }
                    waitedSeconds.append(seconds)
                }
            }
            for waiter in waiters { await waiter.value }
            #expect(kinds.all == [.poolTimeout, .poolTimeout, .poolTimeout])
            for seconds in waitedSeconds.all {
                #expect(seconds >= 0.55 && seconds < 10, "gave up after \(seconds) s, acquire timeout 0.6 s")
            }
            #expect(pool.statistics.waiting == 0)
            try await holder.release()
            // The sweep due at the first waiter's deadline (3 s) finds the second (queued at
            // 1.5 s) still within its time: it gets the connection when the first is done (~3.6 s),
            // with ~0.9 s to spare for a loaded machine.
            let slow = makePool(database, max: 1, acquireTimeout: 3)
            defer { slow.close() }
            let slowHolder = Holder(slow)
            try #require(await slowHolder.waitUntilHolding(), "the first borrower got the connection")
            let first = Task {
                try await slow.withConnection { connection in
                    usleep(2_000_000)
                    return try connection.queryFirst("SELECT 1") { try $0.int(0) }
                }
            }
            try await Task.sleep(for: .milliseconds(1_500))
            let second = Task { try await slow.withConnection { connection in try connection.queryFirst("SELECT 2") { try $0.int(0) } } }
            try await Task.sleep(for: .milliseconds(100))
            try await slowHolder.release()
            #expect(try await first.value == 1)
            #expect(try await second.value == 2)
            #expect(slow.statistics.inUse == 0)
        }
    }

    @Test func aWaitingBorrowerGetsTheConnectionWhenItIsReturned() async throws {
        try await TestDatabase.with { database in
            let pool = makePool(database, max: 1, acquireTimeout: 20)
            defer { pool.close() }
            let holder = Holder(pool)
            try #require(await holder.waitUntilHolding(), "the first borrower got the connection")
            let waiter = Task {
                try await pool.withConnection { connection in try connection.queryFirst("SELECT 2") { try $0.int(0) } }
            }
            #expect(await eventually(within: 10) { pool.statistics.waiting == 1 })
            try await holder.release()
            let value = try await waiter.value
            #expect(value == 2)
            #expect(pool.statistics.waiting == 0 && pool.statistics.inUse == 0 && pool.statistics.idle == 1)
            #expect(try await database.backendCount(applicationName: "nimbus") == 1)
        }
    }

    @Test func brokenConnectionsAreReplacedWithoutRecreatingThePool() async throws {
        try await TestDatabase.with { database in
            let pool = makePool(database, max: 2)
            defer { pool.close() }
            // Two idle connections in the pool: two borrowers that hold theirs until both have one.
            let holding = Recorder<Int32>()
            let borrow: @Sendable () async throws -> Int32 = {
                try await pool.withConnection { connection in
                    let pid = try connection.queryFirst("SELECT pg_backend_pid()") { try $0.int(0) }.map(Int32.init)!
                    holding.append(pid)
                    let deadline = Date().addingTimeInterval(10)
                    while holding.all.count < 2, Date() < deadline { usleep(10_000) }  // on the pool's queue
                    return pid
                }
            }
            async let first = borrow()
            async let second = borrow()
            let originalPIDs = try await Set([first, second])
            #expect(pool.statistics.idle == 2)

            // A server restart, as far as these connections can tell.
            #expect(try await database.terminateBackends(applicationName: "nimbus") == 2)
            #expect(try await eventually(within: 5) { try await database.backendCount(applicationName: "nimbus") == 0 })

            // The next borrower may see the dead connection (a transient error) or a fresh one.
            do {
                _ = try await pool.withConnection { connection in try connection.run("SELECT 1") }
            } catch let error as PGError {
                #expect(error.isTransient, "first borrower after the restart: \(error)")
            }
            // The one after that works, on a new backend.
            let pid = try await pool.withConnection { connection in
                try connection.queryFirst("SELECT pg_backend_pid()") { try $0.int(0) }.map(Int32.init)!
            }
            #expect(!originalPIDs.contains(pid))
            // And so do the ones after that — no dead connection is left to hand out.
            for _ in 0..<4 {
                let one = try await pool.withConnection { connection in try connection.queryFirst("SELECT 1") { try $0.int(0) } }
                #expect(one == 1)
            }
        }
    }

    @Test func closeFailsLaterBorrowers() async throws {
        try await TestDatabase.with { database in
            let pool = makePool(database, max: 1)
            _ = try await pool.withConnection { connection in try connection.run("SELECT 1") }
            pool.close()
            let error = await #expect(throws: PGError.self) {
                try await pool.withConnection { connection in try connection.run("SELECT 1") }
            }
            #expect(error?.kind == .poolClosed)
            #expect(pool.statistics.idle == 0)
            #expect(try await eventually(within: 5) { try await database.backendCount(applicationName: "nimbus") == 0 })
        }
    }

    @Test func withTransactionOnThePoolCommitsAndRollsBack() async throws {
        try await TestDatabase.with { database in
            let pool = makePool(database, max: 1)
            defer { pool.close() }
            _ = try await pool.withConnection { connection in try connection.run("CREATE TABLE t (id int8)") }
            _ = try await pool.withTransaction { connection in try connection.run("INSERT INTO t VALUES (\(1))") }
            await #expect(throws: MarkerError(code: 7)) {
                try await pool.withTransaction { connection in
                    try connection.run("INSERT INTO t VALUES (\(2))")
                    throw MarkerError(code: 7)
                }
            }
            let ids = try await pool.withConnection { connection in try connection.query("SELECT id FROM t") { try $0.int64(0) } }
            #expect(ids == [1])
        }
    }
}

/// Behind a transaction pooler a statement prepared by one transaction is missing in the next.
@Suite(.timeLimit(.minutes(1))) struct StatementNamingTests {
    private func makePool(_ database: TestDatabase, pooler: PGPool.Pooler) -> PGPool {
        var configuration = PGPool.Configuration(url: database.url)
        configuration.maxConnections = 1
        configuration.pooler = pooler
        return PGPool(configuration: configuration)
    }

    private func preparedCount(_ connection: PGConnection) throws -> Int {
        try connection.queryFirst("SELECT count(*)::int8 FROM pg_prepared_statements WHERE name LIKE 'nimbus!_%' ESCAPE '!'") { try $0.int(0) } ?? -1
    }

    @Test func aMissingPreparedStatementTurnsNamingOffAndTheStatementStillRuns() async throws {
        try await TestDatabase.with { database in
            let pool = makePool(database, pooler: .none)
            defer { pool.close() }
            let value: Int64 = 41
            let first = try await pool.withConnection { try $0.queryFirst("SELECT \(value) + 1") { try $0.int64(0) } }
            #expect(first == 42)
            #expect(try await pool.withConnection { try self.preparedCount($0) } >= 1, "statements are prepared by default")
            // What a transaction pooler does to a session: the next statement lands where the
            // prepared one does not exist. It runs anyway, unnamed, and naming stays off.
            try await pool.withConnection { try $0.runScript("DEALLOCATE ALL") }
            let again = try await pool.withConnection { try $0.queryFirst("SELECT \(value) + 1") { try $0.int64(0) } }
            #expect(again == 42)
            let other: Int64 = 7
            #expect(try await pool.withConnection { try $0.queryFirst("SELECT \(other) * 2") { try $0.int64(0) } } == 14)
            #expect(try await pool.withConnection { try self.preparedCount($0) } == 0, "nothing is prepared once naming is off")
        }
    }

    @Test func insideATransactionTheMissingStatementFailsTheTransactionAsTransient() async throws {
        try await TestDatabase.with { database in
            let pool = makePool(database, pooler: .none)
            defer { pool.close() }
            let value: Int64 = 1
            _ = try await pool.withConnection { try $0.queryFirst("SELECT \(value)") { try $0.int64(0) } }
            try await pool.withConnection { try $0.runScript("DEALLOCATE ALL") }
            await #expect(throws: PGError.self) {
                try await pool.withTransaction { try $0.queryFirst("SELECT \(value)") { try $0.int64(0) } }
            }
            // The retry (a client's) runs unnamed.
            #expect(try await pool.withTransaction { try $0.queryFirst("SELECT \(value)") { try $0.int64(0) } } == 1)
        }
    }

    @Test func transactionModeNeverPreparesNorSetsSessionSettings() async throws {
        try await TestDatabase.with { database in
            let pool = makePool(database, pooler: .transaction)
            defer { pool.close() }
            let value: Int64 = 3
            #expect(try await pool.withConnection { try $0.queryFirst("SELECT \(value)") { try $0.int64(0) } } == 3)
            #expect(try await pool.withConnection { try self.preparedCount($0) } == 0)
            let jit = try await pool.withConnection { try $0.queryFirst("SELECT current_setting('plan_cache_mode')") { try $0.string(0) } }
            #expect(jit == "auto", "no session SET behind a transaction pooler (its connect_query sets them)")
        }
    }
}
