import Foundation
import NimbusPostgres
import Testing

/// A throwaway database on the test cluster: created with a random name for one test and dropped
/// at its end, so database tests run in parallel without seeing each other's tables.
///
/// The cluster comes from `NIMBUS_TEST_DATABASE_URL` (exported by `Tests/run.sh`), a libpq URI to
/// its `postgres` database as a superuser. Without it the tests fail; they never skip.
struct TestDatabase: Sendable {
    let name: String
    /// A libpq URI to this database.
    let url: String

    /// The admin URI from the environment; throws a readable error when it is missing.
    static func adminURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["NIMBUS_TEST_DATABASE_URL"], !url.isEmpty else {
            throw TestSetupError("""
                NIMBUS_TEST_DATABASE_URL is not set: database tests need a PostgreSQL cluster. \
                Run Tests/run.sh, or start one with `bash Tests/test-postgres.sh start DIR` and \
                export the variables it prints
                """)
        }
        guard url.contains("/postgres?") else {
            throw TestSetupError("NIMBUS_TEST_DATABASE_URL must name the postgres database as \"/postgres?\" (got \(url))")
        }
        return url
    }

    /// Creates a database with a random name.
    static func create() async throws -> TestDatabase {
        let admin = try adminURL()
        let name = "nimbus_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        try await blocking {
            let connection = try PGConnection.connect(url: admin, applicationName: "nimbus-test-admin")
            try connection.run("CREATE DATABASE \(identifier: name)")
        }
        return TestDatabase(name: name, url: admin.replacingOccurrences(of: "/postgres?", with: "/\(name)?"))
    }

    /// Drops the database, disconnecting whatever is still connected to it (PostgreSQL 13+).
    func drop() async {
        let name = self.name
        do {
            try await blocking {
                let connection = try PGConnection.connect(url: try Self.adminURL(), applicationName: "nimbus-test-admin")
                try connection.run("DROP DATABASE IF EXISTS \(identifier: name) WITH (FORCE)")
            }
        } catch {
            Issue.record("could not drop test database \(name): \(error)")
        }
    }

    /// Runs `body` with a fresh database and drops it afterwards, whether `body` throws or not.
    static func with<T: Sendable>(_ body: (TestDatabase) async throws -> T) async throws -> T {
        let database = try await create()
        do {
            let value = try await body(database)
            await database.drop()
            return value
        } catch {
            await database.drop()
            throw error
        }
    }

    /// Opens a connection to this database, off the cooperative pool.
    func connect(applicationName: String = "nimbus-test") async throws -> PGConnection {
        let url = self.url
        return try await blocking { try PGConnection.connect(url: url, applicationName: applicationName) }
    }

    /// Runs blocking libpq work on a fresh connection to this database.
    func withConnection<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        let url = self.url
        return try await blocking {
            let connection = try PGConnection.connect(url: url, applicationName: "nimbus-test")
            return try body(connection)
        }
    }

    /// Runs blocking work on an admin connection (to the `postgres` database).
    static func withAdminConnection<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        let url = try adminURL()
        return try await blocking {
            let connection = try PGConnection.connect(url: url, applicationName: "nimbus-test-admin")
            return try body(connection)
        }
    }

    /// Terminates every backend connected to this database (as a server restart would).
    /// Returns how many it terminated.
    @discardableResult
    func terminateBackends(applicationName: String? = nil) async throws -> Int {
        let name = self.name
        return try await Self.withAdminConnection { admin in
            let pids: [Int] = try admin.query("""
                SELECT pid FROM pg_stat_activity
                WHERE datname = \(name) AND pid <> pg_backend_pid()
                  AND (\(applicationName == nil) OR application_name = \(applicationName ?? ""))
                """) { try $0.int(0) }
            for pid in pids {
                try admin.run("SELECT pg_terminate_backend(\(Int32(pid)))")
            }
            return pids.count
        }
    }

    /// Backends connected to this database with the given application name.
    func backendCount(applicationName: String) async throws -> Int {
        let name = self.name
        return try await Self.withAdminConnection { admin in
            try admin.queryFirst("""
                SELECT count(*) FROM pg_stat_activity WHERE datname = \(name) AND application_name = \(applicationName)
                """) { try $0.int(0) } ?? 0
        }
    }
}

/// A test precondition that does not hold (missing environment, unusable setup).
struct TestSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
