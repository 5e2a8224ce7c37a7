import Foundation
import NimbusPostgres
import NimbusStore
import Testing

@Suite struct StoreTests {
    /// The scratch cluster's admin URL, exported by Tests/run.sh. Missing means a broken set-up:
    /// the test fails rather than skipping.
    static func databaseURL() throws -> String {
        try #require(ProcessInfo.processInfo.environment["NIMBUS_TEST_DATABASE_URL"],
                     "NIMBUS_TEST_DATABASE_URL is not set: run the tests through Tests/run.sh")
    }

    @Test func pingMeasuresARoundTrip() async throws {
        let pool = PGPool(configuration: .init(url: try Self.databaseURL()))
        defer { pool.close() }
        let store = try await Store.open(pool: pool)
        let seconds = try await store.ping()
        #expect(seconds > 0 && seconds < 5)
        #expect(store.poolStatistics.idle == 1)
        #expect(store.poolStatistics.inUse == 0)
    }

    @Test func pingFailsWithATransientErrorWhenTheDatabaseIsUnreachable() async throws {
        var configuration = PGPool.Configuration(url: "postgresql:///postgres?host=/nonexistent-socket-dir&user=nimbus")
        configuration.connectTimeoutSeconds = 2
        let pool = PGPool(configuration: configuration)
        defer { pool.close() }
        do {
            _ = try await Store.open(pool: pool)
            Issue.record("opening a store on an unreachable database succeeded")
        } catch let error as PGError {
            #expect(error.isTransient)
        }
        #expect(pool.statistics.inUse == 0)
    }
}
