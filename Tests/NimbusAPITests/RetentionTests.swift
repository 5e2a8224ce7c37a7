import Foundation
import NimbusStore
import NimbusSupport
import Testing

/// Retention (the domain part of the curl scenario 60): the pruner run in-process beside the API.
/// A dry run counts per container, type and zone and changes nothing; a prune deletes what the
/// schema's retention expired, as tombstones a token holder receives; expiring tombstones makes
/// older tokens CHANGE_TOKEN_EXPIRED while newer ones and fresh fetches work; `--older-than 0s
/// --record-type` prunes a type without a policy. (The command's output, its exit codes, a
/// SIGTERM mid-run, `nimbus stats`, the asset grace and the server's own job stay in the scenario.)
@Suite struct RetentionTests {
    private static let container = "iCloud.com.mirxa.AppLocker", day: Int64 = 86_400_000

    private static func event(_ name: String, _ type: String, _ timestamp: Int64) -> String {
        Op.record("create", name, type, fields: #"{"appName":{"value":"Safari"},"bundleID":{"value":"com.apple.Safari"},"timestamp":{"value":\#(timestamp),"type":"TIMESTAMP"}}"#)
    }

    /// The live record names of _defaultZone from a fetch without a token.
    private static func live(_ api: APIFixture, _ token: String) async -> [String] {
        let answer = await api.changes(token, limit: 400, container: container)
        #expect(!answer.records.contains { $0["deleted"]?.boolValue == true }, "a fetch without a token returned tombstones: \(answer)")
        return answer.names.sorted()
    }

    private static func count(_ report: PruneReport?, _ type: String) -> (records: Int, tombstones: Int)? {
        report?.counts.first { $0.recordType == type && $0.zoneName == "_defaultZone" && $0.container == container }.map { ($0.records, $0.tombstones) }
    }

    @Test func expiredEventsBecomeTombstonesThenExpiredTokensWhileNewerTokensWork() async throws {
        try await APIFixture.with { api in
            try await api.importSchema("applocker.json")
            let mac = try await api.token(device: "mac"), phone = try await api.token(device: "phone")
            let now = Int64(Date().timeIntervalSince1970 * 1000), old = now - 31 * Self.day, recent = now - 29 * Self.day
            let created = await api.modify(mac, [Self.event("old-1", "BlockedAppEvent", old), Self.event("old-2", "BlockedAppEvent", old),
                                                 Self.event("recent-1", "BlockedAppEvent", recent), Self.event("recent-2", "FailedAuthEvent", recent),
                                                 Op.record("create", "old-auth", "FailedAuthEvent", fields: #"{"timestamp":{"value":\#(old),"type":"TIMESTAMP"}}"#),
                                                 Op.record("create", "locked-mac", "LockedAppList", fields: #"{"deviceName":{"value":"mac"},"updatedAt":{"value":\#(old),"type":"TIMESTAMP"}}"#)],
                                       container: Self.container)
            try #require(created.codes == Array(repeating: "ok", count: 6), "\(created)")
            let t0 = try #require(await api.changes(phone, limit: 400, container: Self.container).syncToken)
            #expect(await Self.live(api, phone) == ["locked-mac", "old-1", "old-2", "old-auth", "recent-1", "recent-2"])
            let pruner = api.database.store.pruner

            var options = PruneOptions()
            options.dryRun = true
            let dry = try await pruner.prune(options)
            #expect(Self.count(dry, "BlockedAppEvent") ?? (0, 0) == (2, 0) && Self.count(dry, "FailedAuthEvent") ?? (0, 0) == (1, 0), "\(String(describing: dry?.counts))")
            #expect(Self.count(dry, "LockedAppList") == nil, "the dry run would prune LockedAppList (no policy)")
            #expect(await api.changes(phone, syncToken: t0, container: Self.container).summary.isEmpty, "the dry run produced changes")

            let pruned = try await pruner.prune(PruneOptions())
            #expect(Self.count(pruned, "BlockedAppEvent") ?? (0, 0) == (2, 0) && Self.count(pruned, "FailedAuthEvent") ?? (0, 0) == (1, 0), "\(String(describing: pruned?.counts))")
            #expect(await api.lookup(mac, ["old-1", "recent-1"], container: Self.container).codes == ["NOT_FOUND", "ok"])
            let tombstones = await api.changes(phone, syncToken: t0, limit: 400, container: Self.container)
            #expect(tombstones.summary.sorted() == ["old-1 -", "old-2 -", "old-auth -"], "\(tombstones)")
            let t1 = try #require(tombstones.syncToken)

            try await Task.sleep(for: .milliseconds(20))
            options = PruneOptions()
            options.tombstonesOlderThanSeconds = 0
            let expired = try await pruner.prune(options)
            #expect(Self.count(expired, "BlockedAppEvent") ?? (0, 0) == (0, 2), "\(String(describing: expired?.counts))")
            let old0 = await api.changes(phone, syncToken: t0, container: Self.container)
            #expect(old0.status == 410 && old0.serverErrorCode == "CHANGE_TOKEN_EXPIRED", "\(old0)")
            let new1 = await api.changes(phone, syncToken: t1, container: Self.container)
            #expect(new1.status == 200 && new1.summary.isEmpty, "\(new1)")
            #expect(await Self.live(api, phone) == ["locked-mac", "recent-1", "recent-2"])

            options = PruneOptions()
            options.olderThanSeconds = 0
            options.recordTypes = ["LockedAppList"]
            let forced = try await pruner.prune(options)
            #expect(Self.count(forced, "LockedAppList")?.records == 1, "\(String(describing: forced?.counts))")
            #expect(await Self.live(api, phone) == ["recent-1", "recent-2"])
        }
    }
}
