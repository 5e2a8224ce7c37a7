import Foundation
import NimbusCore
import NimbusSupport
import NimbusPostgres
import NimbusStore

/// Why a fixture could not be set up.
package struct FixtureError: Error, CustomStringConvertible {
    package var description: String

    package init(description: String) { self.description = description }
}

/// A migrated throwaway database with an open store, a user and sessions for its devices.
/// Each test gets its own database, so tests run in parallel.
package struct StoreFixture: Sendable {
    package let databaseName: String
    package let adminURL: String
    package let url: String
    package let pool: PGPool
    package let store: Store

    package static func adminURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["NIMBUS_TEST_DATABASE_URL"], url.contains("/postgres?") else {
            throw FixtureError(description: "NIMBUS_TEST_DATABASE_URL is not set: run the tests through Tests/run.sh")
        }
        return url
    }

    package static var migrationsDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../migrations").standardizedFileURL
    }

    /// Runs `body` with a fresh fixture and drops its database afterwards.
    package static func with<T: Sendable>(poolSize: Int = 8, _ body: (StoreFixture) async throws -> T) async throws -> T {
        let admin = try adminURL()
        let name = "nimbus_store_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let url = admin.replacingOccurrences(of: "/postgres?", with: "/\(name)?")
        try await blocking {
            try PGConnection.connect(url: admin).run("CREATE DATABASE \(identifier: name)")
            try Migrator(directory: migrationsDirectory).migrate(try PGConnection.connect(url: url))
        }
        var configuration = PGPool.Configuration(url: url)
        configuration.maxConnections = poolSize
        let pool = PGPool(configuration: configuration)
        let fixture = StoreFixture(databaseName: name, adminURL: admin, url: url, pool: pool, store: try await Store.open(pool: pool))
        defer {
            pool.close()
        }
        do {
            let value = try await body(fixture)
            await fixture.drop()
            return value
        } catch {
            await fixture.drop()
            throw error
        }
    }

    package func drop() async {
        pool.close()
        let admin = adminURL, name = databaseName
        _ = try? await blocking { try PGConnection.connect(url: admin).run("DROP DATABASE IF EXISTS \(identifier: name) WITH (FORCE)") }
    }

    /// A session of `user`'s device on a container's private database (user created if needed).
    package func session(user: String = "alice", device: String = "mac", container: String = "iCloud.test.App",
                 environment: Environment = .development) async throws -> Session {
        if try await !store.accounts.listUsers().contains(where: { $0.name == user }) {
            _ = try await store.accounts.addUser(name: user)
        }
        let token = try await store.accounts.issueToken(user: user, device: device)
        guard let session = try await store.accounts.session(tokenDigest: AccountStore.tokenDigest(token.secret), container: container, environment: environment) else {
            throw FixtureError(description: "a freshly issued token did not authenticate")
        }
        return session
    }

    package func run<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await pool.withConnection(body)
    }
}

package func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result(catching: body)) }
    }
}
