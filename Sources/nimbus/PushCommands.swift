import Foundation
import NimbusStore
import NimbusSupport

/// `nimbus push log`: the per-device delivery log (docs/push.md "For operators").
enum PushCommands {
    static let defaultLimit = 50

    static let spec = CommandSpec(
        name: "push", overview: "Inspect push to sleeping devices.",
        usage: "nimbus push log [<user> | --token-id <id>] [--limit <n>]",
        options: DatabaseOptions.specs + [
            OptionSpec(name: "token-id", valueName: "id", help: "Only this device token's pushes (nimbus token list shows ids)."),
            OptionSpec(name: "limit", valueName: "n", defaultValue: String(defaultLimit),
                       help: "The newest n entries, 1 to \(PushReport.maxListed)."),
        ],
        subcommands: [("log [<user>]", "The delivery log, newest first: time, user, device, notification, push type, outcome, "
                           + "APNs status and reason, attempts, and whether the long-poll delivered first. Every user's without <user>.")])

    static func run(_ argv: [String]) async throws -> Int32 {
        let arguments = try ParsedArguments(argv, spec: spec)
        if arguments.helpRequested || arguments.positionals.isEmpty {
            print(spec.helpText)
            return arguments.helpRequested ? 0 : 64
        }
        guard arguments.positionals[0] == "log", arguments.positionals.count <= 2 else {
            throw UsageError(message: "use 'push log [<user> | --token-id <id>] [--limit <n>]'", command: "push")
        }
        let scope = try scope(user: arguments.positionals.dropFirst().first, tokenID: arguments.value("token-id"))
        let limit = try limit(arguments.value("limit"))
        return try await AdminCommands.withStore(arguments) { store in
            let entries = try await store.pushReport.log(scope, limit: limit)
            if entries.isEmpty { print("no pushes logged") }
            for entry in entries { print(line(entry)) }
        }
    }

    /// A user or a device token, not both.
    static func scope(user: String?, tokenID: String?) throws -> PushLogScope {
        switch (user, tokenID) {
        case (let user?, nil): return .user(user)
        case (nil, let tokenID?):
            guard tokenID.hasPrefix("tok_"), tokenID.count <= 64 else {
                throw UsageError(message: "option '--token-id' needs a device token id (tok_…), not '\(tokenID)'", command: "push")
            }
            return .deviceToken(tokenID)
        case (nil, nil): return .everyone
        case (_?, _?): throw UsageError(message: "give a user or --token-id, not both", command: "push")
        }
    }

    static func limit(_ text: String?) throws -> Int {
        guard let text else { return defaultLimit }
        guard let limit = Int(text), (1...PushReport.maxListed).contains(limit) else {
            throw UsageError(message: "option '--limit' needs a whole number from 1 to \(PushReport.maxListed), not '\(text)'", command: "push")
        }
        return limit
    }

    /// One entry: tab-separated `key=value` fields, as `token list` prints.
    static func line(_ entry: PushLogEntry) -> String {
        let at = Date(timeIntervalSince1970: Double(entry.at) / 1000).formatted(.iso8601)
        return [
            at, "user=\(entry.user)", "device=\(entry.deviceName ?? "?")", "token-id=\(entry.deviceTokenID)",
            "container=\(entry.container)", "environment=\(entry.environment)", "notification=\(entry.notificationID)",
            "type=\(entry.pushType)", "outcome=\(entry.outcome)", "status=\(entry.status.map(String.init) ?? "-")",
            "reason=\(entry.reason ?? "-")", "attempts=\(entry.attempts)", "long-poll-first=\(entry.byLongPoll ? "yes" : "no")",
        ].joined(separator: "\t")
    }
}
