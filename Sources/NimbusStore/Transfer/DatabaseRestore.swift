import Foundation
import NimbusPostgres
import NimbusSupport

/// `nimbus restore`: an archive into an empty database, in one transaction with the migrations
/// the archive lacks and the step that keeps change tokens honest. A failure anywhere (a bad
/// archive, a full disk, a cut connection) leaves the database as it was.
package enum DatabaseRestore {
    /// How far a restore moves every zone's change sequence (and the id and counter sequences)
    /// forward: more than a server could have issued after the backup was taken.
    package static let sequenceGap: Int64 = 1 << 40

    /// What the database at `url` holds before a restore.
    package enum Target: Sendable, Equatable {
        case empty
        /// Tables in `public`; `schemaVersion` when they are a Nimbus database.
        case occupied(tables: Int, schemaVersion: Int?)
    }

    package static func inspect(url: String) throws -> Target {
        let connection = try PGConnection.connect(url: url, connectTimeoutSeconds: 10, applicationName: "nimbus-restore")
        let tables = try connection.queryFirst("""
            SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
            """) { try $0.int(0) } ?? 0
        guard tables > 0 else { return .empty }
        return .occupied(tables: tables, schemaVersion: try Migrator.appliedVersions(connection)?.max())
    }

    /// Restores `archive` into the database at `url`; with `replacing`, whatever `public` held
    /// is dropped in the same transaction. The migrator must know every archived migration.
    package static func restore(_ archive: BackupArchive, into url: String, replacing: Bool, migrator: Migrator) throws {
        try checkCompatible(archive, migrator: migrator)
        let before = replacing ? "DROP SCHEMA IF EXISTS public CASCADE;\nCREATE SCHEMA public;\n" : ""
        let after = "SELECT pg_catalog.set_config('search_path', 'public', false);\n"
            + migrator.script(applyingAllBut: Set(archive.migrationVersions))
            + sequenceGapSQL
        // pg_restore's script piped into psql between BEGIN and COMMIT; COMMIT is sent only
        // when pg_restore read the whole archive, and psql stops at the first error.
        let pipeline = """
            set -o pipefail
            { printf 'BEGIN;\\n%s\\n' "$1"; "$3" --no-owner --no-privileges --file=- "$4" || exit 1; printf '\\n%s\\nCOMMIT;\\n' "$2"; } \
              | "$5" --no-psqlrc --quiet --set=ON_ERROR_STOP=1 --dbname="$6" >/dev/null
            """
        let outcome = try Subprocess.run("/bin/bash", ["-c", pipeline, "nimbus-restore", before, after,
                                                       try PostgresTools.locate("pg_restore"), archive.path,
                                                       try PostgresTools.locate("psql"), url])
        guard outcome.succeeded else {
            throw PGError(.tool, "the restore failed and changed nothing: \(outcome.output.trimmedLines)")
        }
    }

    /// Throws unless this binary knows every migration the archive's database had applied: an
    /// archive from a newer Nimbus. Needs no database, so a restore checks it before creating one.
    package static func checkCompatible(_ archive: BackupArchive, migrator: Migrator) throws {
        let known = Set(migrator.migrations.map(\.version))
        if let unknown = archive.migrationVersions.first(where: { !known.contains($0) }) {
            throw PGError(.archive, """
                \(archive.path) is from a newer Nimbus: its database has migration \(String(format: "%04d", unknown)), \
                and this binary knows up to \(String(format: "%04d", known.max() ?? 0)); restore it with that version or newer
                """)
        }
    }

    /// Moves every counter past anything the server could have issued after the backup, and
    /// records each zone's gap for `records/changes` (migration 0013).
    static let sequenceGapSQL = """
        UPDATE public.zones SET
            tombstone_horizon_seq = GREATEST(tombstone_horizon_seq, lost_through_seq),
            lost_after_seq = change_seq,
            lost_through_seq = change_seq + \(sequenceGap),
            change_seq = change_seq + \(sequenceGap);
        UPDATE public.databases SET change_seq = change_seq + \(sequenceGap), notification_seq = notification_seq + \(sequenceGap);
        SELECT pg_catalog.setval(format('%I.%I', schemaname, sequencename)::regclass, COALESCE(last_value, 0) + \(sequenceGap))
        FROM pg_catalog.pg_sequences WHERE schemaname = 'public';
        """
}
