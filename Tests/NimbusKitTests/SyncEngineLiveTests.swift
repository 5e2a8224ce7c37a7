import Foundation
import Testing
@testable import NimbusKit

/// Live mode: one long-poll per device instead of push.
@Suite("SyncEngine live mode against the real server")
struct SyncEngineLiveTests {
    @Test func everyWriteReachesALiveDeviceWithinASecondAndAServerRestartLosesNothing() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let mac = server.container(token: try server.device(user: "live", device: "mac")).privateDatabase
        let phone = try Device.make(server, token: try server.device(user: "live", device: "phone"))
        await phone.engine.startLive()
        defer { Task { await phone.engine.stopLive() } }
        #expect(await phone.engine.status.isLive)
        try await Task.sleep(nanoseconds: 300_000_000)  // the first fetch and the long-poll are under way

        var acknowledged: [(RecordID, Date)] = []
        for n in 0..<100 {
            let saved = try await mac.save(event("live \(n)"))
            acknowledged.append((saved.id, Date()))
        }
        #expect(try await eventually(10) { acknowledged.allSatisfy { phone.replica.appliedTime($0.0) != nil } })
        let delays = acknowledged.compactMap { id, ack in phone.replica.appliedTime(id).map { max(0, $0.timeIntervalSince(ack)) } }
            .sorted()
        #expect(delays.count == 100)
        let p99 = delays[min(delays.count - 1, Int(Double(delays.count) * 0.99))]
        #expect(p99 < 1.0, "p99 from acknowledgement to apply: \(p99) s")

        // The server restarts while the phone waits; writes after it still arrive.
        try server.restart()
        var later: [RecordID] = []
        for n in 0..<20 { later.append(try await mac.save(event("after restart \(n)")).id) }
        #expect(try await eventually(30) { later.allSatisfy { phone.replica.appliedTime($0) != nil } })
        let contents = try await serverContents(mac)
        #expect(fieldsByID(phone.replica.snapshot) == fieldsByID(contents))
    }

    @Test func liveModeSendsEnqueuedChangesAtOnceAndRetriesWhenTheServerComesBack() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "auto", device: "mac")
        let mac = try Device.make(server, token: token)
        await mac.engine.startLive()
        defer { Task { await mac.engine.stopLive() } }
        try await mac.save(event("now"))
        #expect(try await eventually(30) { await mac.engine.status.pendingCount == 0 })
        server.stop()
        try await mac.save(event("while down"))
        try await Task.sleep(nanoseconds: 500_000_000)
        #expect(await mac.engine.status.pendingCount == 1)
        try server.restart()
        #expect(try await eventually(30) { await mac.engine.status.pendingCount == 0 })
        #expect(try await serverContents(mac.database).count == 2)
    }
}
