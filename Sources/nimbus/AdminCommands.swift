import Foundation
import NimbusCore
import NimbusPostgres
import NimbusStore
import NimbusSupport

/// `nimbus user|token|schema ...`: administration through the database, beside a running server
/// or without one.
enum AdminCommands {
    static let userSpec = CommandSpec(
        name: "user", overview: "Manage users.", usage: "nimbus user add <name> | nimbus user list",
        options: DatabaseOptions.specs,
        subcommands: [("add <name>", "Create a user."), ("list", "List users with their active token counts.")])

    static let tokenSpec = CommandSpec(
        name: "token", overview: "Manage device tokens.",
        usage: "nimbus token issue <user> --device <name> | nimbus token list <user> | nimbus token revoke <token-id>",
        options: DatabaseOptions.specs + [OptionSpec(name: "device", valueName: "name", help: "The device a new token belongs to.")],
        subcommands: [("issue <user> --device <name>", "Issue a token (printed once)."),
                      ("list <user>", "List a user's tokens: ids, devices, created and last-used times."),
                      ("revoke <token-id>", "Revoke a token; its next request is refused.")])

    static let schemaSpec = CommandSpec(
        name: "schema", overview: "Manage container schemas.",
        usage: "nimbus schema import <file> [--environment E] | nimbus schema show <container> [--environment E] | nimbus schema deploy <container>",
        options: DatabaseOptions.specs + [OptionSpec(name: "environment", valueName: "env",
                                                     help: "development or production (import: both when absent; show: development).")],
        subcommands: [("import <file>", "Load a schema file (deploy/schemas/*.json)."),
                      ("show <container>", "Print a container's schema as a schema file."),
                      ("deploy <container>", "Copy the development schema to production.")])

    static func user(_ argv: [String]) async throws -> Int32 {
        let arguments = try ParsedArguments(argv, spec: userSpec)
        if arguments.helpRequested || arguments.positionals.isEmpty {
            print(userSpec.helpText)
            return arguments.helpRequested ? 0 : 64
        }
        return try await withStore(arguments) { store in
            switch (arguments.positionals[0], arguments.positionals.count) {
            case ("add", 2):
                let user = try await store.accounts.addUser(name: arguments.positionals[1])
                print("user: \(user.name)\nuserRecordName: \(user.userRecordName)")
            case ("list", 1):
                for user in try await store.accounts.listUsers() {
                    print("\(user.name)\t\(user.userRecordName)\ttokens=\(user.activeTokens)\tcreated=\(format(user.createdAt))")
                }
            default:
                throw UsageError(message: "use 'nimbus user add <name>' or 'nimbus user list'", command: "user")
            }
        }
    }

    static func token(_ argv: [String]) async throws -> Int32 {
        let arguments = try ParsedArguments(argv, spec: tokenSpec)
        if arguments.helpRequested || arguments.positionals.isEmpty {
            print(tokenSpec.helpText)
            return arguments.helpRequested ? 0 : 64
        }
        return try await withStore(arguments) { store in
            switch (arguments.positionals[0], arguments.positionals.count) {
            case ("issue", 2):
                guard let device = arguments.value("device") else {
                    throw UsageError(message: "'token issue' needs --device <name>", command: "token")
                }
                let token = try await store.accounts.issueToken(user: arguments.positionals[1], device: device)
                print("token-id: \(token.tokenID)\ntoken: \(token.secret)")
            case ("list", 2):
                try await listTokens(user: arguments.positionals[1], store: store)
            case ("revoke", 2):
                try await revokeToken(arguments.positionals[1], store: store)
            default:
                throw UsageError(message: "use 'token issue <user> --device <name>', 'token list <user>' or 'token revoke <token-id>'", command: "token")
            }
        }
    }

    /// `token list USER` (and `device list USER`): one line per token, revoked ones included.
    static func listTokens(user: String, store: Store) async throws {
        for token in try await store.accounts.listTokens(user: user) {
            var line = "\(token.tokenID)\tdevice=\(token.deviceName)\tcreated=\(format(token.createdAt))"
            line += "\tlast-used=\(token.lastUsedAt.map(format) ?? "never")"
            if let revoked = token.revokedAt { line += "\trevoked=\(format(revoked))" }
            print(line)
        }
    }

    /// `token revoke TOKEN-ID` (and `device revoke TOKEN-ID`).
    static func revokeToken(_ tokenID: String, store: Store) async throws {
        try await store.accounts.revokeToken(tokenID: tokenID)
        print("revoked \(tokenID)")
    }

    static func schema(_ argv: [String]) async throws -> Int32 {
        let arguments = try ParsedArguments(argv, spec: schemaSpec)
        if arguments.helpRequested || arguments.positionals.isEmpty {
            print(schemaSpec.helpText)
            return arguments.helpRequested ? 0 : 64
        }
        var environment: Environment?
        if let text = arguments.value("environment") {
            guard let parsed = Environment(rawValue: text) else {
                throw UsageError(message: "option '--environment' must be development or production", command: "schema")
            }
            environment = parsed
        }
        guard arguments.positionals.count == 2 else {
            throw UsageError(message: "use 'schema import <file>', 'schema show <container>' or 'schema deploy <container>'", command: "schema")
        }
        let target = arguments.positionals[1]
        switch arguments.positionals[0] {
        case "import":
            let data: Data
            do { data = try Data(contentsOf: URL(fileURLWithPath: target)) } catch {
                throw SyncError(.badRequest, "Cannot read \(target): \(error.localizedDescription)")
            }
            let json: JSONValue
            do { json = try JSONValue.parse(Array(data)) } catch { throw SyncError(.badRequest, "\(target) is not valid JSON: \(error.description)") }
            let schema = try ContainerSchema.parseFile(json)
            return try await withStore(arguments) { store in
                for env in environment.map({ [$0] }) ?? Environment.allCases {
                    try await store.schemas.importSchema(schema, environment: env)
                }
                print("imported \(schema.recordTypes.count) record types of \(schema.container) into \((environment.map { [$0] } ?? Environment.allCases).map(\.rawValue).joined(separator: " and "))")
            }
        case "show":
            return try await withStore(arguments) { store in
                let schema = try await store.schemas.schema(container: target, environment: environment ?? .development)
                print(String(decoding: schema.fileJSON.serialized(sortedKeys: true), as: UTF8.self))
            }
        case "deploy":
            return try await withStore(arguments) { store in
                let schema = try await store.schemas.deploySchema(container: target)
                print("deployed \(schema.recordTypes.count) record types of \(target) to production")
            }
        default:
            throw UsageError(message: "unknown schema command '\(arguments.positionals[0])'", command: "schema")
        }
    }

    /// Opens the database (attaching to a running server's cluster), runs `body`, closes.
    static func withStore(_ arguments: ParsedArguments, _ body: (Store) async throws -> Void) async throws -> Int32 {
        try DatabaseOptions.configureLogging(arguments, defaultLevel: .warning)
        let database = try DatabaseOptions.openForAdmin(arguments)
        let pool = PGPool(configuration: .init(url: database.url))
        defer {
            pool.close()
            database.close()
        }
        do {
            let store = try await Store.open(pool: pool)
            // What the command wrote (all of it, or what it wrote before failing) reaches running
            // servers' waiting devices before the pool closes: notices are sent after each commit,
            // in the background (`Announcer`).
            do {
                try await body(store)
            } catch {
                await store.flushAnnouncements()
                throw error
            }
            await store.flushAnnouncements()
        } catch let error as SyncError {
            FileHandle.standardError.write(Data("error: \(error.reason)\n".utf8))
            return 1
        }
        return 0
    }

    static func format(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
