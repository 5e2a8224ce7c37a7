import Foundation
import Testing
@testable import NimbusKit

/// Fetches that overlap (live mode beside the app's own fetch, a push beside live mode,
/// CKSyncEngine's automatic sync beside `fetchChanges()`) run one after another and all end.
@Suite("Overlapping fetches against the real server")
struct OverlappingFetchTests {
    @Test func twoOverlappingFetchesBothEndAndTheSecondSeesWhatWasWrittenBeforeIt() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "overlap", device: "phone")
        let writer = server.container(token: try server.device(user: "overlap", device: "mac")).privateDatabase
        let phone = try Device.make(server, token: token)
        let rounds = 10
        let done = Locked(0)
        let task = Task {
            for round in 0..<rounds {
                _ = try await writer.save(event("round \(round)", name: "round-\(round)"))
                async let first: Void = phone.engine.fetchChanges()
                async let second: Void = phone.engine.fetchChanges()
                _ = try await (first, second)
                done.withLock { $0 += 1 }
            }
        }
        // Bounded: before the fix the first round never ended (the second call spun on the actor).
        let start = Date()
        while Date().timeIntervalSince(start) < 60 && done.withLock({ $0 }) < rounds {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        task.cancel()
        #expect(done.withLock { $0 } == rounds, "rounds of two overlapping fetches that ended")
        #expect(phone.replica.snapshot.count == rounds)
    }
}
