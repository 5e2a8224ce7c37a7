import Foundation
import Testing
@testable import NimbusKit
#if canImport(Glibc)
import Glibc
#endif

/// Real processes killed with SIGKILL at random points while they enqueue and send, and the
/// pull model against the real server.
@Suite("SyncEngine journal against kills and the real server")
struct SyncEngineKillTests {
    /// 20 runs of `nimbus-sync churn` (one durable enqueue at a time, a request of 5 after every
    /// third), each SIGKILLed at a random instant. After each kill: every name the process
    /// reported accepted is on the server or still pending in its state file (nothing lost);
    /// then every record on the server that is no longer pending (acknowledged) is deleted there,
    /// so a resend of an acknowledged create would bring it back — the server's change feed
    /// would list it again — and is caught (nothing duplicated). At the end the state file is sent
    /// out and the same checks hold for all 20 runs.
    @Test func killedAtRandomWhileEnqueuingAndSendingNothingAcceptedIsLostAndNothingSentTwice() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let token = try server.device(user: "churn", device: "mac")
        let state = temporaryDirectory("churn").appendingPathComponent("sync.json")
        let tool = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("nimbus-sync")
        let environment = ["NIMBUS_URL": server.url.absoluteString, "NIMBUS_TOKEN": token, "NIMBUS_CONTAINER": TestServer.container]
        let database = server.container(token: token).privateDatabase
        var accepted: Set<String> = []
        var deleted: Set<String> = []
        var runsThatAccepted = 0
        var killedMidSend = 0
        for run in 0..<20 {
            let process = Process()
            process.executableURL = tool
            process.arguments = ["churn", state.path, String(format: "r%02d", run)]
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            // Once it is enqueuing (start-up is slow on a busy machine), kill it at a random instant.
            var data = Data()
            while !String(decoding: data, as: UTF8.self).contains("accepted ") {
                let more = output.fileHandleForReading.availableData
                if more.isEmpty { break }
                data.append(more)
            }
            try await Task.sleep(nanoseconds: UInt64.random(in: 0...600_000_000))
            kill(process.processIdentifier, SIGKILL)
            data.append(output.fileHandleForReading.readDataToEndOfFile())
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal, "run \(run): the tool exited by itself")
            // Only whole lines count: the last may have been cut by the kill.
            var lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            lines.removeLast()
            let acceptedNow = lines.compactMap { $0.hasPrefix("accepted ") ? String($0.dropFirst(9)) : nil }
            accepted.formUnion(acceptedNow)
            if !acceptedNow.isEmpty { runsThatAccepted += 1 }
            if lines.last?.hasPrefix("accepted ") == true && acceptedNow.count % 3 == 0 { killedMidSend += 1 }

            let pending = Set(try runTool(tool, ["pending-names", state.path], environment: environment).split(separator: "\n").map(String.init))
            let onServer = Set(try await serverContents(database).keys.map(\.recordName))
            let lost = accepted.subtracting(onServer).subtracting(pending).subtracting(deleted)
            #expect(lost.isEmpty, "run \(run): accepted but neither on the server nor pending: \(lost.sorted().prefix(10))")
            let resent = onServer.intersection(deleted)
            #expect(resent.isEmpty, "run \(run): acknowledged, deleted, and created again: \(resent.sorted().prefix(10))")
            let acknowledged = onServer.subtracting(pending)
            if !acknowledged.isEmpty {
                let results = try await database.modify(acknowledged.map { RecordOperation.delete(RecordID(recordName: $0)) })
                #expect(results.allSatisfy { (try? $0.get()) != nil })
                deleted.formUnion(acknowledged)
            }
        }
        #expect(runsThatAccepted == 20, "only \(runsThatAccepted) of 20 runs enqueued anything before the kill")
        let sent = try runTool(tool, ["send", state.path], environment: environment)
        #expect(sent.contains("sent"))
        let onServer = Set(try await serverContents(database).keys.map(\.recordName))
        #expect(accepted.subtracting(onServer).subtracting(deleted).isEmpty, "accepted changes never reached the server")
        #expect(onServer.intersection(deleted).isEmpty, "acknowledged changes were sent again")
        let status = try runTool(tool, ["status", state.path], environment: environment)
        #expect(status.contains("pending: 0") && status.contains("failed: 0"), "\(status)")
        print("kill runs: \(accepted.count) changes accepted over 20 runs, \(deleted.count) acknowledged before a kill, "
            + "\(onServer.count) sent at the end; \(killedMidSend) kills right after a send began")
    }

    /// The pull model: saves enqueued by ID take the record as the app has it at send time (an
    /// edit after the enqueue goes too); one the app no longer has is dropped; the state file
    /// holds IDs, not the records' bytes.
    @Test func pulledSavesCarryTheRecordAsTheAppHasItAtSendTime() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let device = try Device.make(server, token: try server.device(user: "pull", device: "mac"))
        let bulk = String(repeating: "x", count: 10_000)
        var records: [Record] = []
        for n in 0..<20 {
            var record = event("first \(n)", name: String(format: "pull-%02d", n))
            record.set("body", bulk)
            device.replica.edit(record)
            records.append(record)
        }
        try await device.engine.enqueueSaves(records.map(\.id))
        let stateSize = try Data(contentsOf: device.stateURL).count
        #expect(stateSize < 20 * 1_000, "the state file is \(stateSize) bytes for 20 IDs")
        for n in 0..<5 {
            var edited = records[n]
            edited.set("title", "edited \(n)")
            device.replica.edit(edited)
        }
        device.replica.remove(records[19].id)
        #expect(try await device.flush())
        let contents = try await serverContents(device.database)
        #expect(contents.count == 19)
        #expect(contents[records[19].id] == nil)
        #expect(contents[records[0].id]?.fields["title"] == .string("edited 0"))
        #expect(contents[records[7].id]?.fields["title"] == .string("first 7"))
        #expect(contents[records[7].id]?.fields["body"] == .string(bulk))
        // A second pulled save of a sent record is an update from the server's copy the app now holds.
        guard var again = device.replica.record(records[7].id), again.changeTag != nil else {
            throw TestFailure("the app did not get the server's copy of the sent record")
        }
        again.set("title", "second")
        device.replica.edit(again)
        try await device.engine.enqueueSave(again.id)
        #expect(try await device.flush())
        #expect(try await serverContents(device.database)[again.id]?.fields["title"] == .string("second"))
        #expect(await device.engine.status.failed.isEmpty)
    }

    /// A pulled save that meets a newer server copy is merged field by field like a whole-record
    /// save: the merge is kept in the outbox and sent, not replaced by the app's stale copy.
    @Test func aPulledSaveThatConflictsIsMergedAndSent() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let a = try Device.make(server, token: try server.device(user: "merge", device: "mac"))
        let b = try Device.make(server, token: try server.device(user: "merge", device: "phone"))
        var record = event("original", name: "shared")
        record.set("count", 1)
        try await a.save(record)
        try await a.sync()
        try await b.sync()
        guard var onA = a.replica.record(record.id), var onB = b.replica.record(record.id) else {
            throw TestFailure("the record did not reach both devices")
        }
        onA.set("title", "from the mac")
        a.replica.edit(onA)
        try await a.engine.enqueueSave(onA.id)
        #expect(try await a.flush())
        onB.set("count", 2)
        b.replica.edit(onB)
        try await b.engine.enqueueSave(onB.id)
        #expect(try await b.flush())
        #expect(await b.engine.status.failed.isEmpty)
        let merged = try await serverContents(b.database)[record.id]
        #expect(merged?.fields["title"] == .string("from the mac"))
        #expect(merged?.fields["count"] == .int64(2))
        #expect(b.replica.conflicts.count == 1)
    }

    /// An asset's file deleted by the app after the enqueue (a cache clean-up) still goes up with
    /// the bytes it had: the engine linked it beside its state file, and drops the link once the
    /// server acknowledged the change.
    @Test func anAssetFileDeletedAfterTheEnqueueIsStillSentAndItsLinkReleasedOnceAcknowledged() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let device = try Device.make(server, token: try server.device(user: "pins", device: "mac"))
        let file = temporaryDirectory("photo").appendingPathComponent("photo.bin")
        let bytes = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: file)
        var record = event("with photo", name: "pinned")
        record.fields["photo"] = .asset(Asset(fileURL: file))
        try await device.engine.enqueue(.save(record))
        try FileManager.default.removeItem(at: file)
        let pins = device.stateURL.appendingPathExtension("assets")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: pins.path)) ?? []).count == 1, "the file was not linked")
        #expect(try await device.flush())
        #expect(await device.engine.status.failed.isEmpty)
        guard case .asset(let sent)? = try await serverContents(device.database)[record.id]?.fields["photo"] else {
            throw TestFailure("the server's record has no photo")
        }
        #expect(try Data(contentsOf: try await device.database.downloadAsset(sent)) == bytes)
        #expect(try FileManager.default.contentsOfDirectory(atPath: pins.path).isEmpty, "the link outlived the acknowledgement")
    }
}
