import Foundation
import NimbusPostgres
import NimbusSupport

/// A `nimbus backup` archive: a `pg_dump` custom-format dump of the whole Nimbus database
/// (records, assets, accounts, schemas), taken in one snapshot, so it is consistent while
/// servers write. The applied migrations travel inside it, in `schema_migrations`.
package struct BackupArchive: Sendable {
    package let path: String
    /// The migrations the archived database had applied.
    package let migrationVersions: [Int]
    package let sizeBytes: Int64

    package var schemaVersion: Int { migrationVersions.max() ?? 0 }

    /// Dumps the database at `url` into `path`. The dump is written beside it first and renamed
    /// when complete, so a file at `path` is never a partial backup.
    package static func create(url: String, path: String) throws -> BackupArchive {
        let partial = path + ".partial"
        defer { try? FileManager.default.removeItem(atPath: partial) }
        try PostgresTools.run("pg_dump", ["--format=custom", "--no-owner", "--no-privileges", "--file=\(partial)", "--dbname=\(url)"],
                              failure: "pg_dump could not back up the database")
        if FileManager.default.fileExists(atPath: path) {
            try FileManager.default.removeItem(atPath: path)
        }
        try FileManager.default.moveItem(atPath: partial, toPath: path)
        return try open(path: path)
    }

    /// Reads and checks an archive: every byte of it readable, and a Nimbus database inside.
    package static func open(path: String) throws -> BackupArchive {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let size = (attributes[.size] as? NSNumber)?.int64Value else {
            throw PGError(.archive, "cannot read the backup \(path): no such file")
        }
        do {
            try PostgresTools.run("pg_restore", ["--file=/dev/null", path], failure: "")
        } catch let error as PGError where error.kind == .tool {
            throw PGError(.archive, "\(path) is not a complete backup made by `nimbus backup` (\(error.message.trimmedLines))")
        }
        let versions = try archivedMigrations(path)
        guard !versions.isEmpty else {
            throw PGError(.archive, "\(path) is a PostgreSQL dump but not of a Nimbus database (it has no schema_migrations table)")
        }
        return BackupArchive(path: path, migrationVersions: versions, sizeBytes: size)
    }

    /// The versions in the archive's `schema_migrations` data (its COPY block, read by
    /// `pg_restore` without a database).
    private static func archivedMigrations(_ path: String) throws -> [Int] {
        let listing = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-archive-\(getpid())-\(UInt32.random(in: 0 ... .max)).sql")
        defer { try? FileManager.default.removeItem(at: listing) }
        try PostgresTools.run("pg_restore", ["--data-only", "--table=schema_migrations", "--file=\(listing.path)", path],
                              failure: "pg_restore could not read \(path)")
        let text = (try? String(contentsOf: listing, encoding: .utf8)) ?? ""
        var versions: [Int] = []
        var inCopy = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("COPY ") && line.contains("schema_migrations") {
                inCopy = true
            } else if inCopy {
                if line == "\\." { break }
                if let first = line.split(separator: "\t").first, let version = Int(first) { versions.append(version) }
            }
        }
        return versions.sorted()
    }
}

extension String {
    /// The text with its lines joined by "; " (a program's message on one line).
    var trimmedLines: String {
        split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: "; ")
    }
}
