import Foundation
import NimbusPostgres
import NimbusStore
import NimbusSupport

/// `nimbus backup`, `nimbus restore` and `nimbus db-url`: the whole database as one archive,
/// and the URL that `psql` and `pg_dump` reach it by.
enum BackupCommands {
    static let backupSpec = CommandSpec(
        name: "backup",
        overview: "Write a consistent archive of the whole Nimbus database (works while servers run).",
        usage: "nimbus backup [--output <file or directory/>] [--keep <n>] [--data-dir <path> | --database-url <url>]",
        options: DatabaseOptions.specs + [
            OptionSpec(name: "output", valueName: "path",
                       help: "The archive file, or a directory (an existing one, or a path ending in /) to write nimbus-<UTC time>.dump into (default: <data-dir>/backups/; needed with --database-url)."),
            OptionSpec(name: "keep", valueName: "n",
                       help: "After writing, keep only the newest n nimbus-*.dump archives of that directory."),
        ])

    static let restoreSpec = CommandSpec(
        name: "restore",
        overview: "Restore a `nimbus backup` archive into an empty data directory or database, then migrate it forward.",
        usage: "nimbus restore <file> [--force] [--data-dir <path> | --database-url <url>]",
        options: DatabaseOptions.specs + [
            OptionSpec(name: "force", help: "Replace a database that is not empty (everything in it is dropped).", isFlag: true),
        ],
        positionals: [("<file>", "An archive written by `nimbus backup`.")])

    static let databaseURLSpec = CommandSpec(
        name: "db-url",
        overview: "Print the libpq URL of the Nimbus database (for psql and pg_dump).",
        usage: "nimbus db-url [--data-dir <path> | --database-url <url>]",
        options: DatabaseOptions.specs)

    static func backup(_ argv: [String]) async throws -> Int32 {
        guard let arguments = try backupSpec.parse(argv) else { return 0 }
        try arguments.refusePositionals()
        let keep = try arguments.integer("keep")
        if keep == 0 { throw UsageError(message: "option '--keep' needs at least 1", command: "backup") }
        let target = try BackupTarget(arguments)
        if keep != nil, target.directory == nil {
            throw UsageError(message: "option '--keep' needs --output to be a directory (end it with /)", command: "backup")
        }
        try DatabaseOptions.configureLogging(arguments, defaultLevel: .warning)
        let database = try DatabaseOptions.openForAdmin(arguments)
        defer { database.close() }
        let path = try target.file()
        let started = Date()
        let archive = try BackupArchive.create(url: database.url, path: path)
        print("backed up the database (schema version \(String(format: "%04d", archive.schemaVersion)), \(archive.sizeBytes) bytes) to \(path) in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        if let keep, let directory = target.directory {
            for removed in try BackupTarget.prune(directory, keeping: keep) {
                print("removed the older backup \(removed)")
            }
        }
        return 0
    }

    static func restore(_ argv: [String]) async throws -> Int32 {
        guard let arguments = try restoreSpec.parse(argv) else { return 0 }
        guard arguments.positionals.count == 1 else {
            throw UsageError(message: "name one archive to restore: nimbus restore <file>", command: "restore")
        }
        try DatabaseOptions.configureLogging(arguments, defaultLevel: .warning)
        let migrator = try Migrator(directory: DatabaseOptions.migrationsDirectory(arguments))
        let archive = try BackupArchive.open(path: arguments.positionals[0])
        // Checked before a database is opened: opening one creates a cluster in an empty data directory.
        try DatabaseRestore.checkCompatible(archive, migrator: migrator)
        let dataDirectory = DatabaseOptions.dataDirectory(arguments)
        let createsCluster = arguments.value("database-url") == nil && !EmbeddedCluster.hasCluster(dataDirectory: dataDirectory)
        let createsDirectory = createsCluster && !FileManager.default.fileExists(atPath: dataDirectory.path)
        let database: DatabaseOptions.Opened
        do {
            database = try DatabaseOptions.open(arguments, migrating: false)
        } catch let error as PGError where error.kind == .clusterInUse {
            throw PGError(.clusterInUse, "\(error.message.components(separatedBy: ";").first ?? error.message); stop it before restoring")
        }
        defer { database.close() }
        do {
            try restore(archive, into: database, force: arguments.flag("force"), migrator: migrator)
        } catch {
            // A refused or failed restore changes nothing: not even an empty new cluster stays.
            if createsCluster { database.cluster?.discard() }
            if createsDirectory { try? FileManager.default.removeItem(at: dataDirectory) }
            throw error
        }
        // Servers running on this database (through --database-url) wake their waiting devices.
        // The restore is done either way: a failure here only leaves them waiting out their wait.
        let pool = PGPool(configuration: .init(url: database.url))
        defer { pool.close() }
        do {
            try await Store.open(pool: pool).announceEverything()
        } catch {
            FileHandle.standardError.write(Data("warning: restored, but could not tell running servers (their waiting devices re-read when their wait ends): \(error)\n".utf8))
        }
        let migrated = (migrator.migrations.map(\.version).max() ?? 0) > archive.schemaVersion
        print("restored \(archive.path) (schema version \(String(format: "%04d", archive.schemaVersion))\(migrated ? ", migrated forward" : "")); change tokens from after the backup will get CHANGE_TOKEN_EXPIRED")
        return 0
    }

    /// Restores into an empty database, or with `force` into one that is not; then migrates.
    private static func restore(_ archive: BackupArchive, into database: DatabaseOptions.Opened, force: Bool, migrator: Migrator) throws {
        let replacing: Bool
        switch try DatabaseRestore.inspect(url: database.url) {
        case .empty:
            replacing = false
        case .occupied(let tables, let version):
            guard force else {
                let what = version.map { "a Nimbus database (schema version \(String(format: "%04d", $0)))" } ?? "\(tables) tables"
                throw PGError(.archive, "the target database is not empty: it holds \(what); pass --force to replace it, or restore into a new --data-dir")
            }
            replacing = true
        }
        try DatabaseRestore.restore(archive, into: database.url, replacing: replacing, migrator: migrator)
        let connection = try PGConnection.connect(url: database.url, connectTimeoutSeconds: 10, applicationName: "nimbus-migrate")
        try migrator.migrate(connection)
    }

    static func databaseURL(_ argv: [String]) async throws -> Int32 {
        guard let arguments = try databaseURLSpec.parse(argv) else { return 0 }
        if let url = arguments.value("database-url") {
            print(url)
            return 0
        }
        let directory = DatabaseOptions.dataDirectory(arguments)
        guard EmbeddedCluster.hasCluster(dataDirectory: directory) else {
            throw PGError(.noDatabase, "no Nimbus database at \(directory.path) — pass --data-dir or --database-url")
        }
        if let url = EmbeddedCluster.runningServerURL(dataDirectory: directory) {
            print(url)
        } else {
            print(EmbeddedCluster.socketURL(dataDirectory: directory))
            FileHandle.standardError.write(Data("note: no server is running on \(directory.path), so its PostgreSQL is stopped; the URL works while `nimbus serve` runs\n".utf8))
        }
        return 0
    }
}

/// Where `nimbus backup` writes: a named file, or a directory of timestamped archives.
struct BackupTarget {
    var explicitFile: String?
    var directory: URL?

    init(_ arguments: ParsedArguments) throws {
        if let output = arguments.value("output") {
            var isDirectory: ObjCBool = false
            if output.hasSuffix("/") || (FileManager.default.fileExists(atPath: output, isDirectory: &isDirectory) && isDirectory.boolValue) {
                directory = URL(fileURLWithPath: output, isDirectory: true)
            } else {
                explicitFile = output
            }
        } else if arguments.value("database-url") != nil {
            throw UsageError(message: "with --database-url, say where the archive goes: --output <file or directory/>", command: "backup")
        } else {
            directory = DatabaseOptions.dataDirectory(arguments).appendingPathComponent("backups", isDirectory: true)
        }
    }

    /// The archive's path; a directory is created when missing.
    func file() throws -> String {
        if let explicitFile { return explicitFile }
        guard let directory else { throw UsageError(message: "no --output", command: "backup") }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmssSSS'Z'"
        return directory.appendingPathComponent("nimbus-\(formatter.string(from: Date())).dump").path
    }

    /// Deletes all but the newest `keeping` archives named `nimbus-*.dump`; returns their paths.
    static func prune(_ directory: URL, keeping: Int) throws -> [String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasPrefix("nimbus-") && $0.hasSuffix(".dump") }
            .sorted(by: >)
        var removed: [String] = []
        for name in names.dropFirst(keeping) {
            let path = directory.appendingPathComponent(name).path
            try FileManager.default.removeItem(atPath: path)
            removed.append(path)
        }
        return removed
    }
}
