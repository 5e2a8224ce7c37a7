import Foundation
import NimbusCore
import NimbusPostgres
import NimbusStore
import NimbusSupport

/// `nimbus prune` and `nimbus stats`.
enum PruneCommands {
    static let pruneSpec = CommandSpec(
        name: "prune",
        overview: "Delete expired records (leaving tombstones), expire old tombstones, collect unreferenced assets and old notifications.",
        usage: "nimbus prune [--older-than <duration>] [--record-type <T> ...] [--container <C>] [--tombstones-older-than <duration>] [--dry-run]",
        options: DatabaseOptions.specs + [
            OptionSpec(name: "older-than", valueName: "duration",
                       help: "Prune records whose retention start is older than this (30d, 12h, 0s); default: each type's schema retention."),
            OptionSpec(name: "record-type", valueName: "type", help: "Only this record type (repeatable). With --older-than, applies even to types without a policy."),
            OptionSpec(name: "container", valueName: "id", help: "Only this container."),
            OptionSpec(name: "tombstones-older-than", valueName: "duration", defaultValue: "90d",
                       help: "Expire tombstones older than this (raises zone horizons: older tokens get CHANGE_TOKEN_EXPIRED)."),
            OptionSpec(name: "asset-grace", valueName: "duration", defaultValue: "24h", help: "Keep unreferenced assets this long."),
            OptionSpec(name: "dry-run", help: "Print what would be deleted; change nothing.", isFlag: true),
        ]
    )

    static let statsSpec = CommandSpec(
        name: "stats",
        overview: "Per user and container: records by type, tombstones, assets and bytes, oldest event; each device's last sync.",
        usage: "nimbus stats [--data-dir <path>] [--database-url <url>]",
        options: DatabaseOptions.specs
    )

    static func prune(_ argv: [String]) async throws -> Int32 {
        guard let arguments = try pruneSpec.parse(argv) else { return 0 }
        var options = PruneOptions()
        options.olderThanSeconds = try duration(arguments, "older-than")
        options.tombstonesOlderThanSeconds = try duration(arguments, "tombstones-older-than") ?? 90 * 86_400
        options.assetGraceSeconds = try duration(arguments, "asset-grace") ?? 86_400
        options.recordTypes = arguments.repeated("record-type")
        options.container = arguments.value("container")
        options.dryRun = arguments.flag("dry-run")
        for type in options.recordTypes where !Names.isValidRecordType(type) {
            throw UsageError(message: "option '--record-type' needs a record type name, not '\(type)'", command: "prune")
        }
        try arguments.refusePositionals()
        try DatabaseOptions.configureLogging(arguments, defaultLevel: .warning)
        let database = try DatabaseOptions.openForAdmin(arguments)
        let pool = PGPool(configuration: .init(url: database.url))
        defer {
            pool.close()
            database.close()
        }
        let store = try await Store.open(pool: pool)
        FileHandle.standardOutput.write(Data((options.dryRun ? "dry run: nothing will be changed\n" : "pruning…\n").utf8))
        guard let report = try await store.pruner.prune(options, wait: true, progress: { line in
            // Written at once, also when stdout is a file (print would buffer it).
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }) else {
            FileHandle.standardError.write(Data("error: another prune holds the lock\n".utf8))
            return 1
        }
        // Running servers learn of the deletions through NOTIFY, sent after each batch commits.
        await store.flushAnnouncements()
        let verb = options.dryRun ? "would delete" : "deleted"
        if report.counts.isEmpty { print("no records or tombstones to prune") }
        for count in report.counts {
            print("\(count.container) \(count.environment) user=\(count.owner) zone=\(count.zoneName) type=\(count.recordType): \(verb) records=\(count.records) tombstones=\(count.tombstones)")
        }
        print("assets: \(verb) \(report.assets) (\(report.assetBytes) bytes); notifications: \(verb) \(report.notifications)")
        print(String(format: "done in %.1f s", report.seconds))
        return 0
    }

    static func stats(_ argv: [String]) async throws -> Int32 {
        guard let arguments = try statsSpec.parse(argv) else { return 0 }
        try DatabaseOptions.configureLogging(arguments, defaultLevel: .warning)
        let database = try DatabaseOptions.openForAdmin(arguments)
        let pool = PGPool(configuration: .init(url: database.url))
        defer {
            pool.close()
            database.close()
        }
        let store = try await Store.open(pool: pool)
        let (databases, devices) = try await store.statistics.stats()
        // Which server answered: behind a proxy that follows the primary (deploy/ha/) it changes
        // with a failover.
        let probe = try await store.probe()
        print("database \(probe.host) \(probe.role) round-trip=\(String(format: "%.1f", probe.seconds * 1000))ms")
        let now = Date()
        for entry in databases {
            let types = entry.liveByType.map { "\($0.type)=\($0.count)" }.joined(separator: " ")
            let expiry = entry.nextExpiry.map { "\($0.formatted(.iso8601)) (\(DurationText.relative(seconds: $0.timeIntervalSince(now))))" } ?? "-"
            print("\(entry.user) \(entry.container) \(entry.environment): records[\(types.isEmpty ? "none" : types)] tombstones=\(entry.tombstones) assets=\(entry.assets) bytes=\(entry.assetBytes) oldest-event-expires=\(expiry)")
        }
        for device in devices {
            let age = device.lastUsed.map { "\(Int(now.timeIntervalSince($0)))s ago (\($0.formatted(.iso8601)))" } ?? "never"
            print("device \(device.user)/\(device.device) \(device.tokenID): last-sync=\(age)\(device.revoked ? " revoked" : "")")
        }
        return 0
    }

    private static func duration(_ arguments: ParsedArguments, _ name: String) throws -> Int64? {
        guard let text = arguments.value(name) else { return nil }
        guard let seconds = DurationText.seconds(text) else {
            throw UsageError(message: "option '--\(name)' needs a duration such as 30d, 12h, 15m or 0s, not '\(text)'", command: "prune")
        }
        return seconds
    }
}
