import Foundation
import NimbusPostgres
import Testing

@Suite(.timeLimit(.minutes(1))) struct PGListenerTests {
    /// A started listener with its notifications and connect callbacks recorded.
    private struct Harness {
        let listener: PGListener
        let notifications = Recorder<PGNotification>()
        let connects = Recorder<Bool>()

        init(url: String, channels: [String]) {
            let notifications = self.notifications
            let connects = self.connects
            listener = PGListener(url: url, channels: channels,
                                  onNotification: { notifications.append($0) },
                                  onConnect: { connects.append($0) })
        }

        func stop() async throws {
            let listener = self.listener
            try await blocking { listener.stop() }
        }
    }

    private func notify(_ database: TestDatabase, channel: String, payload: String) async throws {
        _ = try await database.withConnection { connection in
            try connection.run("SELECT pg_notify(\(channel), \(payload))")
        }
    }

    @Test func receivesANotifyWithItsPayload() async throws {
        try await TestDatabase.with { database in
            let harness = Harness(url: database.url, channels: ["zone_changes", "Mixed Case-channel"])
            harness.listener.start()
            #expect(await harness.connects.waitFor(within: 5) { $0 == false } != nil, "onConnect(false) after start")
            #expect(harness.listener.isConnected)

            try await notify(database, channel: "zone_changes", payload: "db=1 zone=ünï")
            try await notify(database, channel: "Mixed Case-channel", payload: "")
            try await notify(database, channel: "not_listened", payload: "ignored")
            let zone = await harness.notifications.waitFor(within: 2) { $0.channel == "zone_changes" }
            let mixed = await harness.notifications.waitFor(within: 2) { $0.channel == "Mixed Case-channel" }
            try await harness.stop()

            #expect(zone?.payload == "db=1 zone=ünï")
            #expect((zone?.backendPID ?? 0) > 0)
            #expect(mixed?.payload == "")
            #expect(!harness.notifications.all.contains { $0.channel == "not_listened" })
            #expect(harness.connects.all == [false])
        }
    }

    @Test func reconnectsAfterItsBackendIsTerminatedAndKeepsReceiving() async throws {
        try await TestDatabase.with { database in
            let harness = Harness(url: database.url, channels: ["changes"])
            harness.listener.start()
            #expect(await harness.connects.waitFor(within: 5) { $0 == false } != nil)
            try await notify(database, channel: "changes", payload: "before")
            #expect(await harness.notifications.waitFor(within: 2) { $0.payload == "before" } != nil)

            #expect(try await database.terminateBackends(applicationName: "nimbus-listener") == 1)
            let reconnected = await harness.connects.waitFor(within: 3) { $0 == true }
            #expect(reconnected != nil, "onConnect(isReconnect: true) within 3 s; calls so far: \(harness.connects.all)")
            #expect(await eventually(within: 1) { harness.listener.isConnected })

            try await notify(database, channel: "changes", payload: "after")
            let after = await harness.notifications.waitFor(within: 2) { $0.payload == "after" }
            try await harness.stop()
            #expect(after != nil, "a notification sent after the reconnect arrives")
            #expect(harness.connects.all.first == false)
        }
    }

    /// `onConnect`'s contract: `isReconnect` is false the first time. A listener started before its
    /// database exists (or while the server is still starting) connects for the first time later.
    @Test func theFirstSuccessfulConnectIsNotAReconnectEvenAfterFailedAttempts() async throws {
        let admin = try TestDatabase.adminURL()
        let name = "nimbus_test_late_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        let database = TestDatabase(name: name, url: admin.replacingOccurrences(of: "/postgres?", with: "/\(name)?"))
        let harness = Harness(url: database.url, channels: ["changes"])
        harness.listener.start()
        try await Task.sleep(for: .milliseconds(300))  // a few failed attempts: the database is missing
        _ = try await TestDatabase.withAdminConnection { admin in try admin.run("CREATE DATABASE \(identifier: name)") }
        let first = await harness.connects.waitFor(within: 10) { _ in true }
        try await harness.stop()
        await database.drop()
        #expect(first == false, "first onConnect reported isReconnect == \(String(describing: first))")
    }

    @Test func stopReturnsPromptlyAndClosesTheConnection() async throws {
        try await TestDatabase.with { database in
            let harness = Harness(url: database.url, channels: ["changes"])
            harness.listener.start()
            #expect(await harness.connects.waitFor(within: 5) { _ in true } != nil)
            #expect(try await database.backendCount(applicationName: "nimbus-listener") == 1)
            // Let the thread settle into poll(2), whose timeout (1 s) stop must not wait out.
            try await Task.sleep(for: .milliseconds(200))
            let seconds = try await elapsedSeconds { try await harness.stop() }
            #expect(seconds < 10, "stop took \(seconds) s")
            #expect(!harness.listener.isConnected)
            #expect(try await eventually(within: 2) { try await database.backendCount(applicationName: "nimbus-listener") == 0 })
        }
    }

    @Test func stopReturnsPromptlyWhileTheServerIsUnreachable() async throws {
        let url = "postgresql:///postgres?host=/tmp/nimbus-no-such-dir-\(UUID().uuidString.prefix(8))&user=nimbus"
        let harness = Harness(url: url, channels: ["changes"])
        harness.listener.start()
        // Let it fail a few times and back off.
        try await Task.sleep(for: .milliseconds(500))
        let seconds = try await elapsedSeconds { try await harness.stop() }
        #expect(seconds < 10, "stop took \(seconds) s while reconnecting")
        #expect(harness.connects.all.isEmpty)
        #expect(!harness.listener.isConnected)
    }

    /// Shutdown paths may run twice (a second SIGTERM) or before start-up finished.
    @Test func stopTwiceOrWithoutStartDoesNotHang() async throws {
        let url = "postgresql:///postgres?host=/tmp/nimbus-no-such-dir-\(UUID().uuidString.prefix(8))&user=nimbus"
        let started = Harness(url: url, channels: ["changes"])
        started.listener.start()
        try await started.stop()
        #expect(await returnsWithin(seconds: 2) { started.listener.stop() }, "a second stop() returns")

        let neverStarted = Harness(url: url, channels: ["changes"])
        #expect(await returnsWithin(seconds: 2) { neverStarted.listener.stop() }, "stop() without start() returns")
    }

    /// Runs `body` on a thread and reports whether it returned in time. A body that hangs is
    /// abandoned on its thread, so that the suite reports the failure instead of hanging.
    private func returnsWithin(seconds: Double, _ body: @escaping @Sendable () -> Void) async -> Bool {
        let done = Recorder<Bool>()
        Thread { body(); done.append(true) }.start()
        return await done.waitFor(within: seconds) { $0 } != nil
    }
}
