import Foundation
import NimbusStore
import NimbusSupport

/// `nimbus admin token issue|list|revoke`: the tokens of the admin console's API (distinct from
/// device tokens; only their digests are stored).
enum AdminTokenCommands {
    static let spec = CommandSpec(
        name: "admin", overview: "Manage admin tokens for the admin console (--admin-listen).",
        usage: "nimbus admin token issue <name> | nimbus admin token list | nimbus admin token revoke <token-id>",
        options: DatabaseOptions.specs,
        subcommands: [("token issue <name>", "Issue an admin token (printed once)."),
                      ("token list", "List admin tokens: ids, names, created, last used, revoked."),
                      ("token revoke <token-id>", "Revoke an admin token; its next request is refused.")])

    static func run(_ argv: [String]) async throws -> Int32 {
        let arguments = try ParsedArguments(argv, spec: spec)
        let positionals = arguments.positionals
        if arguments.helpRequested || positionals.isEmpty {
            print(spec.helpText)
            return arguments.helpRequested ? 0 : 64
        }
        guard positionals[0] == "token" else {
            throw UsageError(message: "use 'admin token issue <name>', 'admin token list' or 'admin token revoke <token-id>'", command: "admin")
        }
        return try await AdminCommands.withStore(arguments) { store in
            switch (positionals.dropFirst().first, positionals.count) {
            case ("issue"?, 3):
                let token = try await store.admin.issueToken(name: positionals[2])
                print("token-id: \(token.tokenID)\ntoken: \(token.secret)")
            case ("list"?, 2):
                for token in try await store.admin.listTokens() {
                    var line = "\(token.tokenID)\tname=\(token.name)\tcreated=\(AdminCommands.format(token.createdAt))"
                    line += "\tlast-used=\(token.lastUsedAt.map(AdminCommands.format) ?? "never")"
                    if let revoked = token.revokedAt { line += "\trevoked=\(AdminCommands.format(revoked))" }
                    print(line)
                }
            case ("revoke"?, 3):
                try await store.admin.revokeToken(tokenID: positionals[2])
                print("revoked \(positionals[2])")
            default:
                throw UsageError(message: "use 'admin token issue <name>', 'admin token list' or 'admin token revoke <token-id>'", command: "admin")
            }
        }
    }
}
