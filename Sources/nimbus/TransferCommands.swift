import Foundation
import NimbusCore
import NimbusPostgres
import NimbusStore
import NimbusSupport

/// `nimbus export` and `nimbus import`: one user's data as a directory of JSON and asset files,
/// to leave a server or move to another one.
enum TransferCommands {
    static let exportSpec = CommandSpec(
        name: "export",
        overview: "Write one user's records, zones, subscriptions, schemas and assets to a new directory.",
        usage: "nimbus export --user <name> [--container <id>] --output <directory>",
        options: DatabaseOptions.specs + [
            OptionSpec(name: "user", valueName: "name", help: "The user whose private databases are exported."),
            OptionSpec(name: "container", valueName: "id", help: "Only this container (default: all of the user's)."),
            OptionSpec(name: "output", valueName: "directory", help: "A new or empty directory for the export."),
        ])

    static let importSpec = CommandSpec(
        name: "import",
        overview: "Load a directory written by `nimbus export` into a user of this server.",
        usage: "nimbus import <directory> --user <name>",
        options: DatabaseOptions.specs + [
            OptionSpec(name: "user", valueName: "name", help: "The user (existing on this server) who receives the data."),
        ] + ServeCommand.limitOptions.filter { importLimits.map(\.kebabCased).contains($0.name) },
        positionals: [("<directory>", "A directory written by `nimbus export`.")])

    /// The server's limits an import checks records and subscriptions against (the same flags
    /// and environment variables as `serve`).
    static let importLimits = ["maxRecordBytes"]

    static func export(_ argv: [String]) async throws -> Int32 {
        guard let arguments = try exportSpec.parse(argv) else { return 0 }
        try arguments.refusePositionals()
        guard let user = arguments.value("user"), let output = arguments.value("output") else {
            throw UsageError(message: "'export' needs --user <name> and --output <directory>", command: "export")
        }
        return try await AdminCommands.withStore(arguments) { store in
            let manifest = try await reporting {
                try await store.exports.write(
                    user: user, container: arguments.value("container"), to: URL(fileURLWithPath: output), progress: { print($0) })
            }
            let records = manifest.databases.reduce(0) { $0 + $1.records }
            print("exported \(records) records in \(manifest.databases.count) databases and \(manifest.assets) assets of \(user) to \(output)")
        }
    }

    static func importing(_ argv: [String]) async throws -> Int32 {
        guard let arguments = try importSpec.parse(argv) else { return 0 }
        guard arguments.positionals.count == 1 else {
            throw UsageError(message: "name one export directory: nimbus import <directory> --user <name>", command: "import")
        }
        guard let user = arguments.value("user") else {
            throw UsageError(message: "'import' needs --user <name>", command: "import")
        }
        var limits = Limits()
        for name in importLimits {
            if let value = try arguments.integer(name.kebabCased) { _ = limits.set(name, to: value) }
        }
        let plan = try reporting { try UserImport.read(URL(fileURLWithPath: arguments.positionals[0])) }
        print("checked the export: \(plan.recordCount) records, \(plan.assetCount) assets")
        return try await AdminCommands.withStore(arguments) { store in
            let report = try await reporting {
                try await store.imports.apply(plan, user: user, limits: limits, progress: { print($0) })
            }
            print("imported \(report.records) records, \(report.assets) assets and \(report.subscriptions) subscriptions into \(user)")
        }
    }

    /// Turns a `TransferError` into the command's one-line error.
    private static func reporting<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let error as TransferError {
            throw CommandFailure(message: error.description)
        }
    }

    private static func reporting<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as TransferError {
            throw CommandFailure(message: error.description)
        }
    }
}

/// A command that cannot do what it was asked: exits 1 with the sentence.
struct CommandFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
