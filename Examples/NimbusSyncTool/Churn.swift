import Foundation
import NimbusKit

/// What the kill tests drive: an app that keeps enqueuing and sending until it is killed.
enum Churn {
    /// `churn STATE PREFIX`: enqueues PREFIX-000000, PREFIX-000001, … one per durable call,
    /// printing `accepted NAME` once each enqueue returned, and sends a request of 5 changes
    /// after every third, printing `pending N` after its answers were saved. Runs until killed.
    static func churn(_ engine: SyncEngine, prefix: String) async throws {
        await engine.setBatchSize(5)
        var n = 0
        while true {
            let name = String(format: "%@-%06d", prefix, n)
            var record = Record(recordType: "Event", id: RecordID(recordName: name))
            record.set("title", "event \(n)")
            try await engine.enqueue(.save(record))
            say("accepted \(name)")
            n += 1
            if n % 3 == 0 {
                await engine.sendChanges(maxRequests: 1)
                say("pending \(await engine.status.pendingCount)")
            }
        }
    }

    /// `pending-names STATE`: the record names still in the outbox, one a line.
    static func pendingNames(_ engine: SyncEngine) async {
        for change in await engine.pendingChanges { say(change.recordID.recordName) }
    }
}
