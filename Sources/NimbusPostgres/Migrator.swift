import Foundation
import NimbusSupport

/// Applies `migrations/NNNN_name.sql` in order, each in its own transaction, under an advisory
/// lock so that instances starting together apply each file once. Applied files are recorded with
/// their SHA-256; an applied file that was edited afterwards stops start-up.
package struct Migrator: Sendable {
    package struct Migration: Sendable, Hashable {
        package var version: Int
        package var name: String
        package var sql: String
        package var checksum: String
    }

    /// Arbitrary constant naming the migration lock in `pg_advisory_lock`'s key space.
    static let advisoryLockKey: Int64 = 0x4E494D4255535F4D  // "NIMBUS_M"

    package let migrations: [Migration]
    private let logger = Logger(subsystem: "migrate")

    package init(migrations: [Migration]) {
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Reads every `NNNN_name.sql` file of a directory.
    package init(directory: URL) throws {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw PGError(.migration, "cannot read the migrations directory \(directory.path): \(error.localizedDescription)")
        }
        var migrations: [Migration] = []
        var seen: [Int: String] = [:]
        for name in names.sorted() where name.hasSuffix(".sql") {
            let stem = name.dropLast(4)
            let parts = stem.split(separator: "_", maxSplits: 1)
            guard parts.count == 2, parts[0].count == 4, let version = Int(parts[0]), version > 0 else {
                throw PGError(.migration, "migration file \(name) is not named NNNN_name.sql")
            }
            if let other = seen[version] {
                throw PGError(.migration, "migration files \(other) and \(name) have the same number")
            }
            seen[version] = name
            let data = try Data(contentsOf: directory.appendingPathComponent(name))
            guard let sql = String(data: data, encoding: .utf8) else {
                throw PGError(.migration, "migration file \(name) is not UTF-8")
            }
            migrations.append(Migration(version: version, name: String(stem), sql: sql,
                                        checksum: Hex.encode(SHA256.hash(data))))
        }
        guard !migrations.isEmpty else {
            throw PGError(.migration, "the migrations directory \(directory.path) has no NNNN_name.sql files")
        }
        self.init(migrations: migrations)
    }

    /// The versions applied to the database, or nil when it has no `schema_migrations` table
    /// (not a Nimbus database, or an empty one).
    package static func appliedVersions(_ connection: PGConnection) throws -> [Int]? {
        let hasTable = try connection.queryFirst("SELECT to_regclass('public.schema_migrations') IS NOT NULL") { try $0.bool(0) } ?? false
        guard hasTable else { return nil }
        return try connection.query("SELECT version FROM public.schema_migrations ORDER BY version") { try $0.int(0) }
    }

    /// SQL that applies the migrations missing from `applied` and records them, for a script
    /// that runs in one transaction with other steps (a restore from an older archive).
    package func script(applyingAllBut applied: Set<Int>) -> String {
        var script = ""
        for migration in migrations where !applied.contains(migration.version) {
            script += migration.sql + "\n;\n"
            script += "INSERT INTO schema_migrations (version, name, checksum) VALUES "
                + "(\(migration.version), '\(migration.name.replacingOccurrences(of: "'", with: "''"))', '\(migration.checksum)');\n"
        }
        return script
    }

    /// Applies what is missing; returns the versions applied now.
    ///
    /// Every step is a transaction that first takes the migration lock (a transaction-level
    /// advisory lock): instances starting together apply each migration once, and the lock can
    /// never outlive its transaction, even on a connection through a transaction pooler.
    @discardableResult
    package func migrate(_ connection: PGConnection) throws -> [Int] {
        let lock: SQL = "SELECT pg_advisory_xact_lock(\(Self.advisoryLockKey))"
        let applied = try connection.withTransaction { connection in
            try connection.run(lock)
            try connection.run("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    checksum text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            return try connection.query("SELECT version, name, checksum FROM schema_migrations") { row in
                (version: try row.int(0), name: try row.string(1), checksum: try row.string(2))
            }
        }
        let appliedByVersion = Dictionary(applied.map { ($0.version, $0) }, uniquingKeysWith: { first, _ in first })
        for migration in migrations {
            if let record = appliedByVersion[migration.version], record.checksum != migration.checksum {
                throw PGError(.migration, """
                    migration \(migration.name).sql was changed after it was applied \
                    (recorded checksum \(record.checksum.prefix(12))…, file \(migration.checksum.prefix(12))…); \
                    restore the applied text and put the change in a new migration
                    """)
            }
        }
        let known = Set(migrations.map(\.version))
        for record in applied where !known.contains(record.version) {
            logger.warning("the database has a migration this binary does not know; is it older than the database?",
                           ["version": record.version, "name": record.name])
        }
        var appliedNow: [Int] = []
        for migration in migrations where appliedByVersion[migration.version] == nil {
            let ran = try connection.withTransaction { connection -> Bool in
                try connection.run(lock)
                // Another instance may have applied it while this one waited for the lock.
                let done = try connection.queryFirst("SELECT 1 FROM schema_migrations WHERE version = \(migration.version)") { _ in true } ?? false
                guard !done else { return false }
                try connection.runScript(migration.sql)
                try connection.run("""
                    INSERT INTO schema_migrations (version, name, checksum)
                    VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                    """)
                return true
            }
            guard ran else { continue }
            logger.info("applied migration", ["version": migration.version, "name": migration.name])
            appliedNow.append(migration.version)
        }
        return appliedNow
    }
}
