import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// The `nimbus` command: the server and its admin commands.
@main
struct Nimbus {
    static let version = "0.1.0"

    static let spec = CommandSpec(
        name: "",
        overview: "Nimbus, a self-hosted CloudKit-style sync server.",
        usage: "nimbus <subcommand> [options]",
        options: [],
        subcommands: [
            ("serve", "Run the server (embedded PostgreSQL unless --database-url is given)."),
            ("migrate", "Apply database migrations and exit."),
            ("user", "Manage users: add, list."),
            ("token", "Manage device tokens: issue, list, revoke."),
            ("device", "Pair a user's devices with a code (and QR); list, revoke."),
            ("admin", "Manage admin tokens for the admin console: issue, list, revoke."),
            ("schema", "Manage container schemas: import, show, deploy."),
            ("push", "Inspect push to sleeping devices: the delivery log."),
            ("prune", "Delete expired records, old tombstones, unreferenced assets and old notifications."),
            ("backup", "Write a consistent archive of the whole database (while servers run, too)."),
            ("restore", "Restore a backup into an empty data directory or database."),
            ("export", "Write one user's records, zones, subscriptions, schemas and assets to a directory."),
            ("import", "Load a directory written by export into a user (of this or another server)."),
            ("db-url", "Print the database's libpq URL, for psql and pg_dump."),
            ("stats", "Show records, tombstones, assets and each device's last sync per user and container."),
            ("relay", "Run the push relay for an app you publish; manage its installations."),
            ("version", "Print the version."),
        ]
    )

    /// Runs the command on the cooperative pool while the main thread waits. (An `async` main ends
    /// the main thread in `dispatch_main`, which valgrind cannot follow: bench/callgrind.sh.)
    static func main() {
        let finished = DispatchSemaphore(value: 0)
        Task.detached {
            await run()
            finished.signal()
        }
        finished.wait()
    }

    static func run() async {
        SignalTrap.ignoreBrokenPipes()
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard let command = arguments.first else {
            print(spec.helpText)
            exit(64)
        }
        arguments.removeFirst()
        do {
            switch command {
            case "serve":
                exit(try await ServeCommand.run(arguments))
            case "migrate":
                exit(try await MigrateCommand.run(arguments))
            case "user":
                exit(try await AdminCommands.user(arguments))
            case "token":
                exit(try await AdminCommands.token(arguments))
            case "device":
                exit(try await DeviceCommands.run(arguments))
            case "admin":
                exit(try await AdminTokenCommands.run(arguments))
            case "schema":
                exit(try await AdminCommands.schema(arguments))
            case "push":
                exit(try await PushCommands.run(arguments))
            case "prune":
                exit(try await PruneCommands.prune(arguments))
            case "backup":
                exit(try await BackupCommands.backup(arguments))
            case "restore":
                exit(try await BackupCommands.restore(arguments))
            case "export":
                exit(try await TransferCommands.export(arguments))
            case "import":
                exit(try await TransferCommands.importing(arguments))
            case "db-url":
                exit(try await BackupCommands.databaseURL(arguments))
            case "stats":
                exit(try await PruneCommands.stats(arguments))
            case "relay":
                exit(try await RelayCommand.run(arguments))
            case "version", "--version":
                print("nimbus \(version)")
                exit(0)
            case "help", "--help", "-h":
                print(spec.helpText)
                exit(0)
            default:
                throw UsageError(message: "unknown subcommand '\(command)'", command: "")
            }
        } catch let error as UsageError {
            let helpCommand = error.command.isEmpty ? "nimbus --help" : "nimbus \(error.command) --help"
            FileHandle.standardError.write(Data("error: \(error.message)\nSee '\(helpCommand)'.\n".utf8))
            exit(64)
        } catch let error as PGError {
            // Operator-facing: the sentence, without the internal error kind.
            let detail = error.detail.map { " (\($0))" } ?? ""
            FileHandle.standardError.write(Data("error: \(error.message)\(detail)\n".utf8))
            exit(1)
        } catch let error as SyncError {
            FileHandle.standardError.write(Data("error: \(error.reason)\n".utf8))
            exit(1)
        } catch let error as CommandFailure {
            FileHandle.standardError.write(Data("error: \(error.message)\n".utf8))
            exit(1)
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            exit(1)
        }
    }
}
