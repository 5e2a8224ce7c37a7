import NimbusTestSupport
import Foundation
import NimbusPostgres
import NimbusStore
import Testing

@Suite struct StoreTests {
    @Test func pingMeasuresARoundTrip() async throws {
        try await StoreFixture.with { fixture in
            let seconds = try await fixture.store.ping()
            #expect(seconds > 0 && seconds < 30)
            #expect(fixture.store.poolStatistics.inUse == 0)
            #expect(fixture.store.poolStatistics.idle >= 1)
        }
    }

    @Test func openingOnAnUnreachableDatabaseFailsWithATransientError() async throws {
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

    @Test func theServerSecretIsCreatedOnceAndKept() async throws {
        try await StoreFixture.with { fixture in
            let again = try await Store.open(pool: fixture.pool)
            let token = fixture.store.signer.encode(.init(databaseID: 1, zoneID: 2, sequence: 3), zoneName: "z")
            #expect(again.signer.decodeZoneToken(token, zoneName: "z") != nil)
            let count = try await fixture.run { try $0.queryFirst("SELECT count(*) FROM server_secrets") { try $0.int(0) } }
            #expect(count == 1)
        }
    }
}
