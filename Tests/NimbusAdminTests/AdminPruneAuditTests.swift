import Foundation
import NimbusAdmin
import NimbusHTTP
import NimbusStore
import Testing

/// A prune commits in batches, so its audit entry cannot share a transaction with it: the entry
/// is written as the run starts, and a run whose entry fails prunes nothing.
@Suite struct AdminPruneAuditTests {
    @Test func aPruneWhoseAuditEntryFailsEndsWithThatErrorBeforePruning() async throws {
        try await AdminFixture.with { admin in
            try await admin.database.run { try $0.run("ALTER TABLE admin_audit RENAME TO admin_audit_elsewhere") }
            let started = await admin.send("POST", "/api/retention/runs", body: #"{"dryRun": false}"#)
            #expect(started.status == 200, "\(started)")
            var run = started
            for _ in 0..<100 where run.json["finishedAt"]?.isNull != false {
                try await Task.sleep(for: .milliseconds(20))
                run = await admin.send("GET", "/api/retention/runs/current")
            }
            #expect(run.json["error"]?.stringValue?.isEmpty == false, "\(run)")
            #expect(run.json["report"] == nil, "the prune never ran: \(run)")
            #expect(run.items("progress").isEmpty, "\(run)")
        }
    }
}
