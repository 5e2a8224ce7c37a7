import Foundation
import Testing
@testable import NimbusKit

/// Exactly-once delivery of the outbox through a stopped server and through lost answers.
@Suite("SyncEngine delivery against the real server")
struct SyncEngineDeliveryTests {
    @Test func changesEnqueuedWhileTheServerIsDownArriveExactlyOnce() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "off", device: "mac")
        let mac = try Device.make(server, token: token)
        server.stop()
        let events = (0..<100).map { event("e\($0)") }
        for record in events { try await mac.save(record) }
        await mac.engine.sendChanges()
        let offline = await mac.engine.status
        #expect(offline.pendingCount == 100)
        #expect(offline.isOffline)
        #expect(offline.lastError?.code == .networkFailure)

        // A new engine on the same state file (the app restarted) still has all of them.
        let restarted = try Device.make(server, token: token, stateURL: mac.stateURL)
        #expect(await restarted.engine.status.pendingCount == 100)
        try server.restart()
        #expect(try await restarted.flush())
        let contents = try await serverContents(restarted.database)
        #expect(contents.count == 100)
        #expect(Set(contents.keys) == Set(events.map(\.id)))
        #expect(await restarted.engine.status.failed.isEmpty)
    }

    @Test func lostAnswersLeaveTheServerExactlyAsIntended() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "lossy", device: "mac")
        let proxy = try ChaosProxy(upstreamPort: server.port)
        defer { proxy.stop() }
        let mac = try Device.make(server, token: token, url: proxy.url)
        await mac.engine.setBatchSize(5)
        proxy.setMode(.dropAnswers(probability: 0.4))

        // Creates.
        var records = (0..<40).map { event("v0-\($0)") }
        for record in records { try await mac.save(record) }
        #expect(try await mac.flush(60))
        // Updates of what was saved (the replica holds the server copies now).
        records = records.compactMap { mac.replica.record($0.id) }
        #expect(records.count == 40)
        #expect(records.allSatisfy { $0.existsOnServer })
        for var record in records {
            record.set("title", "v1-\(record.recordName)")
            try await mac.save(record)
        }
        #expect(try await mac.flush(60))
        // Deletes of every fourth.
        let deleted = records.enumerated().filter { $0.offset % 4 == 0 }.map(\.element.id)
        for id in deleted { try await mac.delete(id) }
        #expect(try await mac.flush(60))
        proxy.setMode(.pass)

        #expect(proxy.dropped > 0)
        let contents = try await serverContents(mac.database)
        #expect(contents.count == 30)
        #expect(Set(contents.keys) == Set(records.map(\.id)).subtracting(deleted))
        #expect(contents.values.allSatisfy { $0.fields["title"] == .string("v1-\($0.recordName)") })
        #expect(mac.replica.conflicts.isEmpty, "a lost answer was surfaced as a conflict")
        #expect(mac.replica.failed.isEmpty)
        #expect(await mac.engine.status.failed.isEmpty)
    }

    @Test func anUnreachableGarbageOr500ServerLosesNothingFromTheOutbox() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "bad", device: "mac")
        for answer in [BadServer.Answer.garbage, .internalError, .htmlBadGateway] {
            let bad = try BadServer(answer: answer)
            defer { bad.stop() }
            let state = temporaryDirectory("state").appendingPathComponent("sync.json")
            let device = try Device.make(server, token: token, url: bad.url, stateURL: state)
            try await device.save(event("kept-\(answer)"))
            await device.engine.sendChanges()
            let status = await device.engine.status
            #expect(status.pendingCount == 1, "\(answer)")
            #expect(status.lastError != nil, "\(answer)")
            #expect(status.lastError?.isRetryable == true, "\(answer): \(String(describing: status.lastError))")
            // The same state file against the real server delivers it.
            let good = try Device.make(server, token: token, stateURL: state)
            #expect(try await good.flush())
        }
        let wrong = try Device.make(server, token: "wrong-token")
        try await wrong.save(event("unauthorized"))
        await wrong.engine.sendChanges()
        let status = await wrong.engine.status
        #expect(status.pendingCount == 1)
        #expect(status.lastError?.code == .notAuthenticated)
        #expect(try await serverContents(server.container(token: token).privateDatabase).count == 3)
    }
}
