import Foundation
import Testing
@testable import NimbusKit
#if canImport(Glibc)
import Glibc
#endif

/// A client killed mid-send, conflicts between two devices, and an expired change token.
@Suite("SyncEngine recovery against the real server")
struct SyncEngineRecoveryTests {
    /// Records are named by the client, and a repeated create of one is answered as it is, so
    /// counting the server's records after the restart could not show a resend. Instead, every
    /// record the server holds when the sender is killed is deleted there: whatever the restarted
    /// sender creates is then a send the server accepted after the kill, and a resend of a change
    /// acknowledged before it would come back as a live record.
    @Test func aClientKilledWhileSendingDeliversEveryAcceptedEventOnceAfterRestart() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "kill", device: "mac")
        let state = temporaryDirectory("state").appendingPathComponent("sync.json")
        let tool = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("nimbus-sync")
        let environment = ["NIMBUS_URL": server.url.absoluteString, "NIMBUS_TOKEN": token,
                           "NIMBUS_CONTAINER": TestServer.container]
        let names = (0..<100).map { String(format: "k-%06d", $0) }
        let enqueued = try runTool(tool, ["enqueue", state.path, "100", "k"], environment: environment)
        #expect(enqueued.contains("enqueued 100"))

        // Send slowly (5 per request, 100 ms apart) and SIGKILL the process part-way: after it
        // reported a few acknowledged requests, well before the last.
        let sender = Process()
        sender.executableURL = tool
        sender.arguments = ["send", state.path, "5", "100"]
        sender.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        sender.standardOutput = output
        try sender.run()
        var reported = ""
        while !reported.contains("pending 80"), sender.isRunning {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            reported += String(decoding: data, as: UTF8.self)
        }
        kill(sender.processIdentifier, SIGKILL)
        sender.waitUntilExit()
        #expect(reported.contains("pending 80"), "the sender reported: \(reported)")
        let database = server.container(token: token).privateDatabase
        let atKill = Set(try await serverContents(database).keys.map(\.recordName))
        #expect(atKill.count >= 20 && atKill.count < 100, "\(atKill.count) records on the server when the sender was killed")
        // What the killed sender's state file still has to send: the unacknowledged tail.
        let status = try runTool(tool, ["status", state.path], environment: environment)
        guard let pending = status.split(separator: "\n").first(where: { $0.hasPrefix("pending: ") }).flatMap({ Int($0.dropFirst(9)) }) else {
            throw TestFailure("no pending count in: \(status)")
        }
        let unacknowledged = Array(names.suffix(pending))
        // The sender prints `pending N` after saving each answer: none it reported is lost.
        let lines = reported.split(separator: "\n", omittingEmptySubsequences: false).dropLast()   // the last may be cut
        let reportedPending = lines.compactMap { $0.hasPrefix("pending ") ? Int($0.dropFirst(8)) : nil }.min() ?? 100
        #expect(pending <= reportedPending, "the state file has \(pending) pending, the sender had reported \(reportedPending)")
        // The batch in flight at the kill may have been committed without its answer being saved.
        #expect(Set(names).subtracting(atKill).isSubset(of: unacknowledged), "acknowledged but not on the server")
        #expect(atKill.intersection(unacknowledged).count <= 5, "more than the one batch in flight was committed unacknowledged")

        let deletions = try await database.modify(atKill.map { RecordOperation.delete(RecordID(recordName: $0)) })
        #expect(deletions.allSatisfy { (try? $0.get()) != nil })
        #expect(try await serverContents(database).isEmpty)

        let resumed = try runTool(tool, ["send", state.path], environment: environment)
        #expect(resumed.contains("sent"))
        let sentAfterKill = Set(try await serverContents(database).keys.map(\.recordName))
        // Exactly the unacknowledged ones were sent again: one more would be a resend.
        #expect(sentAfterKill == Set(unacknowledged),
                "sent after the kill: \(sentAfterKill.count), unacknowledged: \(unacknowledged.count); resent: \(sentAfterKill.subtracting(unacknowledged).sorted().prefix(10))")
        #expect(sentAfterKill.union(atKill) == Set(names), "every event reached the server")
        let after = try runTool(tool, ["status", state.path], environment: environment)
        #expect(after.contains("pending: 0"))
        #expect(after.contains("failed: 0"))
    }

    @Test func twoDevicesEditingOneRecordOfflineConvergeOnTheFieldMerge() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let a = try Device.make(server, token: try server.device(user: "pat", device: "mac"))
        let b = try Device.make(server, token: try server.device(user: "pat", device: "phone"))
        var record = event("original", name: "shared")
        record.set("count", 1)
        try await a.save(record)
        try await a.sync()
        try await b.sync()
        guard var onA = a.replica.record(record.id), var onB = b.replica.record(record.id) else {
            throw TestFailure("the record did not reach both devices")
        }
        // Offline, both edit: A the title, B the count.
        onA.set("title", "from A")
        onB.set("count", 2)
        try await a.save(onA)
        try await b.save(onB)
        try await a.sync()
        try await b.sync()
        try await a.sync()

        let conflicts = b.replica.conflicts
        #expect(conflicts.count == 1)
        if let conflict = conflicts.first {
            #expect(conflict.base?.fields["title"] == .string("original"))
            #expect(conflict.base?.fields["count"] == .int64(1))
            #expect(conflict.local.fields["count"] == .int64(2))
            #expect(conflict.local.fields["title"] == .string("original"))
            #expect(conflict.server.fields["title"] == .string("from A"))
            #expect(conflict.server.fields["count"] == .int64(1))
        }
        let server_ = try await serverContents(a.database)[record.id]
        #expect(server_?.fields["title"] == .string("from A"))
        #expect(server_?.fields["count"] == .int64(2))
        #expect(a.replica.record(record.id)?.fields == server_?.fields)
        #expect(b.replica.record(record.id)?.fields == server_?.fields)
    }

    @Test func serverWinsAndClientWinsPoliciesResolveWithoutTheApp() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        for policy in [ConflictPolicy.serverWins, .clientWins] {
            let user = policy == .serverWins ? "sw" : "cw"
            let a = try Device.make(server, token: try server.device(user: user, device: "mac"), policy: policy)
            let b = try Device.make(server, token: try server.device(user: user, device: "phone"), policy: policy)
            try await a.save(event("base", name: "r"))
            try await a.sync()
            try await b.sync()
            guard var onA = a.replica.record(RecordID(recordName: "r")), var onB = b.replica.record(RecordID(recordName: "r")) else {
                throw TestFailure("the record did not reach both devices")
            }
            onA.set("title", "A")
            onB.set("title", "B")
            try await a.save(onA)
            try await a.sync()
            try await b.save(onB)
            try await b.sync()
            try await a.sync()
            let expected: RecordValue = policy == .serverWins ? .string("A") : .string("B")
            let onServer = try await serverContents(a.database)[RecordID(recordName: "r")]
            #expect(onServer?.fields["title"] == expected, "\(policy)")
            #expect(b.replica.record(RecordID(recordName: "r"))?.fields["title"] == expected, "\(policy)")
            #expect(a.replica.record(RecordID(recordName: "r"))?.fields["title"] == expected, "\(policy)")
        }
    }

    @Test func anExpiredTokenResetsTheZoneAndNamesTheRecordsTheServerNoLongerHas() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let a = try Device.make(server, token: try server.device(user: "exp", device: "mac"))
        let b = try Device.make(server, token: try server.device(user: "exp", device: "phone"))
        let records = (0..<10).map { event("r\($0)") }
        for record in records { try await a.save(record) }
        try await a.sync()
        try await b.sync()
        #expect(b.replica.snapshot.count == 10)
        let gone = records.prefix(4).map(\.id)
        for id in gone { try await a.delete(id) }
        try await a.save(event("new"))
        try await a.sync()
        try server.admin(["prune", "--tombstones-older-than", "0s"])

        try await b.engine.fetchChanges()
        let resets = b.replica.tokenResets
        #expect(resets.count == 1)
        #expect(resets.first?.reason == .tokenReset)
        #expect(Set(resets.first?.deleted ?? []) == Set(gone))
        let contents = try await serverContents(b.database)
        #expect(contents.count == 7)
        #expect(fieldsByID(b.replica.snapshot) == fieldsByID(contents))
        // The reset token works: nothing more to fetch, no second reset.
        try await b.engine.fetchChanges()
        #expect(b.replica.tokenResets.count == 1)
    }
}

func runTool(_ tool: URL, _ arguments: [String], environment: [String: String]) throws -> String {
    let process = Process()
    process.executableURL = tool
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    guard process.terminationStatus == 0 else { throw TestFailure("\(tool.lastPathComponent) \(arguments) exited \(process.terminationStatus): \(text)") }
    return text
}
