import Foundation
import NimbusPostgres
import Testing

@Suite struct PGTransactionTests {
    @Test func withTransactionCommitsWhenTheBodyReturns() async throws {
        try await TestDatabase.with { database in
            try await database.withConnection { connection in
                try connection.run("CREATE TABLE t (id int8)")
                _ = try connection.withTransaction { try $0.run("INSERT INTO t VALUES (\(1))") }
            }
            // Another connection sees the row: it was committed.
            let count = try await database.withConnection { connection in
                try connection.queryFirst("SELECT count(*) FROM t") { try $0.int(0) }
            }
            #expect(count == 1)
        }
    }

    @Test func withTransactionRollsBackAndRethrowsTheOriginalError() async throws {
        try await TestDatabase.with { database in
            let (thrown, countAfterRollback, seenElsewhere) = try await database.withConnection { connection in
                try connection.run("CREATE TABLE t (id int8)")
                var thrown: (any Error)?
                do {
                    try connection.withTransaction { connection in
                        try connection.run("INSERT INTO t VALUES (\(1))")
                        throw MarkerError(code: 42)
                    }
                } catch {
                    thrown = error
                }
                let countAfterRollback = try connection.queryFirst("SELECT count(*) FROM t") { try $0.int(0) }
                // Usable and back in autocommit: this insert is visible to another connection at once.
                try connection.run("INSERT INTO t VALUES (\(2))")
                let other = try PGConnection.connect(url: database.url)
                let seenElsewhere = try other.query("SELECT id FROM t") { try $0.int64(0) }
                return (thrown as? MarkerError, countAfterRollback, seenElsewhere)
            }
            #expect(thrown == MarkerError(code: 42))
            #expect(countAfterRollback == 0)
            #expect(seenElsewhere == [2])
        }
    }

    @Test func withTransactionRollsBackAfterAServerErrorAndStaysUsable() async throws {
        try await TestDatabase.with { database in
            let (state, rows) = try await database.withConnection { connection in
                try connection.run("CREATE TABLE t (id int8 PRIMARY KEY)")
                var state: String?
                do {
                    try connection.withTransaction { connection in
                        try connection.run("INSERT INTO t VALUES (\(1))")
                        try connection.run("INSERT INTO t VALUES (\(1))")
                    }
                } catch let error as PGError {
                    state = error.sqlState
                }
                // Not left in an aborted transaction ("current transaction is aborted", 25P02).
                try connection.run("INSERT INTO t VALUES (\(3))")
                return (state, try connection.query("SELECT id FROM t") { try $0.int64(0) })
            }
            #expect(state == "23505")
            #expect(rows == [3])
        }
    }

    @Test func withTransactionThrowsWhenCommitFailsOnADeferredConstraint() async throws {
        try await TestDatabase.with { database in
            let (state, rows) = try await database.withConnection { connection in
                try connection.run("CREATE TABLE d (id int8 UNIQUE DEFERRABLE INITIALLY DEFERRED)")
                var state: String?
                do {
                    try connection.withTransaction { connection in
                        try connection.run("INSERT INTO d VALUES (\(1)), (\(1))")  // checked only at COMMIT
                    }
                } catch let error as PGError {
                    state = error.sqlState
                }
                try connection.run("INSERT INTO d VALUES (\(2))")
                return (state, try connection.query("SELECT id FROM d") { try $0.int64(0) })
            }
            #expect(state == "23505")
            #expect(rows == [2])
        }
    }

    /// PostgreSQL answers COMMIT in an aborted transaction with the tag ROLLBACK and no error, so a
    /// body that swallowed a statement error must not look committed: its earlier writes are gone.
    @Test func withTransactionThrowsWhenTheServerRolledBackInsteadOfCommitting() async throws {
        try await TestDatabase.with { database in
            let (outcome, rows) = try await database.withConnection { connection in
                try connection.run("CREATE TABLE t (id int8 PRIMARY KEY)")
                var outcome = "returned normally"
                do {
                    try connection.withTransaction { connection in
                        try connection.run("INSERT INTO t VALUES (\(1))")
                        _ = try? connection.run("INSERT INTO t VALUES (\(1))")  // fails; the transaction is aborted
                    }
                } catch {
                    outcome = "threw \(error)"
                }
                return (outcome, try connection.query("SELECT id FROM t") { try $0.int64(0) })
            }
            #expect(rows == [], "the server rolled the transaction back")
            #expect(outcome.hasPrefix("threw"), "withTransaction \(outcome) although nothing was committed")
        }
    }

}

struct MarkerError: Error, Equatable {
    var code: Int
}
