import Foundation
import NimbusPostgres
import NimbusSupport

/// `nimbus migrate`: apply migrations and exit.
enum MigrateCommand {
    static let spec = CommandSpec(
        name: "migrate",
        overview: "Apply the database migrations that are missing, then exit.",
        usage: "nimbus migrate [--data-dir <path>] [--database-url <url>] [--migrations-dir <path>]",
        options: DatabaseOptions.specs
    )

    static func run(_ argv: [String]) async throws -> Int32 {
        guard let arguments = try spec.parse(argv) else { return 0 }
        try arguments.refusePositionals()
        try DatabaseOptions.configureLogging(arguments)
        let opened = try DatabaseOptions.open(arguments)
        opened.close()
        print("migrations are up to date")
        return 0
    }
}
