import Foundation
import Testing
@testable import NimbusKit

/// Errors that are the change's own (parked, visible) and errors the engine recovers from.
@Suite("SyncEngine errors against the real server")
struct SyncEngineErrorTests {
    @Test func requestsAreSplitAtTheServersLimitsAndAnOversizedRecordIsParkedVisibly() async throws {
        let server = try TestServer.start(["--max-operations-per-request", "7", "--max-record-bytes", "4096"])
        defer { server.stop() }
        let mac = try Device.make(server, token: try server.device(user: "lim", device: "mac"))
        let records = (0..<50).map { event("small \($0)") }
        for record in records { try await mac.save(record) }
        var huge = event("huge", name: "huge")
        huge.set("blob", String(repeating: "x", count: 10_000))
        try await mac.save(huge)
        #expect(try await mac.flush())
        let status = await mac.engine.status
        #expect(status.pendingCount == 0)
        #expect(status.failed.map(\.recordID) == [huge.id])
        #expect(status.failed.first?.cause.code == .limitExceeded)
        #expect(mac.replica.failed.map(\.recordID) == [huge.id])
        #expect(try await serverContents(mac.database).count == 50)

        // Fixed by the app and retried, it goes through.
        huge.set("blob", "small now")
        try await mac.save(huge)
        #expect(await mac.engine.status.failed.isEmpty)
        #expect(try await mac.flush())
        #expect(try await serverContents(mac.database).count == 51)
    }

    @Test func aChangeToAMissingZoneRecreatesTheZoneAndIsSent() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let mac = try Device.make(server, token: try server.device(user: "zn", device: "mac"))
        let zone = ZoneID("Later")
        try await mac.save(event("in a zone that is not there", in: zone))
        #expect(try await mac.flush())
        #expect(try await serverContents(mac.database, zone: zone).count == 1)

        // Deleted on the server by another device: the next change recreates it.
        _ = try await mac.database.modifyZones(deleting: [zone])
        try await mac.save(event("after the delete", in: zone))
        #expect(try await mac.flush())
        #expect(try await serverContents(mac.database, zone: zone).count == 1)
    }

    @Test func aThrottledDeviceWaitsAtLeastRetryAfterAndLosesNothing() async throws {
        // One request a second after a burst of two: eight sends are throttled unless they take
        // over six seconds (at two a second, a loaded CI machine spread them past the refill).
        let server = try TestServer.start(["--requests-per-second-per-token", "1", "--request-burst-per-token", "2"])
        defer { server.stop() }
        let mac = try Device.make(server, token: try server.device(user: "thr", device: "mac"))
        await mac.engine.setBatchSize(1)
        for n in 0..<8 { try await mac.save(event("t\(n)")) }
        await mac.engine.sendChanges()
        let status = await mac.engine.status
        #expect(status.lastError?.code == .requestRateLimited)
        #expect((status.lastError?.retryAfter ?? 0) > 0)
        #expect(status.pendingCount > 0)
        #expect(try await mac.flush(60))
        let reader = server.container(token: try server.device(user: "thr", device: "reader")).privateDatabase
        #expect(try await serverContents(reader).count == 8)
    }
}
