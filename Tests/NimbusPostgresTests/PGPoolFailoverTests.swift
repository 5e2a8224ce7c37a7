import Foundation
import NimbusPostgres
import Testing

/// What the pool does when the server behind its URL changes (a failover behind HAProxy,
/// deploy/ha/): the real failovers run in Tests/integration/scenarios/96-98.
@Suite(.timeLimit(.minutes(1))) struct PGPoolFailoverTests {
    /// A read-only server's refusal (a standby reached in the moment after a switchover) is
    /// transient, and the pool keeps no connection to that server: the next borrower connects afresh.
    @Test func aReadOnlyRefusalIsTransientAndDropsEveryIdleConnection() async throws {
        try await TestDatabase.with { database in
            var configuration = PGPool.Configuration(url: database.url)
            configuration.maxConnections = 3
            let pool = PGPool(configuration: configuration)
            defer { pool.close() }
            _ = try await pool.withConnection { try $0.run("CREATE TABLE t (n int)") }
            // Three connections at once, each made read-only as a standby's sessions are.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        _ = try await pool.withConnection { connection in
                            _ = try connection.run("SET default_transaction_read_only = on")
                            return try connection.run("SELECT pg_sleep(0.1)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(pool.statistics.idle == 3)
            do {
                _ = try await pool.withConnection { try $0.run("INSERT INTO t VALUES (1)") }
                Issue.record("a write on a read-only connection succeeded")
            } catch let error as PGError {
                #expect(error.sqlState == PGError.SQLState.readOnlyTransaction)
                #expect(error.isReadOnly && error.isTransient && error.meansServerGone)
            }
            #expect(pool.statistics.idle == 0)
            _ = try await pool.withConnection { try $0.run("INSERT INTO t VALUES (2)") }
        }
    }

    /// The server a connection reached: over the test cluster's Unix socket, no address, a primary.
    @Test func theServerIsNamedWithItsRole() async throws {
        try await TestDatabase.with { database in
            let connection = try PGConnection.connect(url: database.url)
            let server = try connection.server()
            #expect(server == DatabaseServer(address: nil, port: nil, isPrimary: true))
            #expect(server.description == "local socket (primary)")
            try connection.requirePrimary()
            #expect(DatabaseServer(address: "127.0.0.1", port: 5433, isPrimary: false).description == "127.0.0.1:5433 (standby)")
            #expect(DatabaseServer(address: "::1", port: 5432, isPrimary: true).host == "[::1]:5432")
        }
    }

    /// What migrations wait out, and what they do not.
    @Test func failoverErrorsAreToldFromConfigurationErrors() {
        #expect(PGError(.server, "cannot execute CREATE TABLE in a read-only transaction", sqlState: "25006").isFailoverInProgress)
        #expect(PGError(.server, "terminating connection due to administrator command", sqlState: "57P01").isFailoverInProgress)
        #expect(PGError(.connectionFailed, "connection to server at \"127.0.0.1\", port 5000 failed: server closed the connection unexpectedly").isFailoverInProgress)
        #expect(PGError(.connectionFailed, "FATAL:  the database system is starting up").isFailoverInProgress)
        #expect(!PGError(.connectionFailed, "connection to server at \"127.0.0.1\", port 5000 failed: Connection refused").isFailoverInProgress)
        #expect(!PGError(.connectionFailed, "FATAL:  password authentication failed for user \"nimbus\"").isFailoverInProgress)
        #expect(!PGError(.server, "relation \"t\" does not exist", sqlState: "42P01").isTransient)
    }
}
