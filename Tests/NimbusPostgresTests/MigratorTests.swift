import Foundation
import NimbusPostgres
import Testing

@Suite(.timeLimit(.minutes(1))) struct MigratorTests {
    static let first = """
        -- The first table.
        CREATE TABLE a (id int8 PRIMARY KEY);
        """
    /// Several statements, and it needs 0001's table: applied out of order it fails.
    static let second = """
        ALTER TABLE a ADD COLUMN note text NOT NULL DEFAULT '';
        CREATE INDEX a_note ON a (note);
        INSERT INTO a (id, note) VALUES (1, 'seeded by 0002; semicolons in strings are fine');
        """

    private func makeDirectory(first: String = first, second: String = second) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        // Written in reverse order so that directory order is no help.
        try directory.write("0002_b.sql", second)
        try directory.write("0001_a.sql", first)
        try directory.write("README.md", "not a migration")
        return directory
    }

    @Test func appliesMigrationsInOrderAndRecordsThem() async throws {
        let directory = try makeDirectory()
        defer { directory.remove() }
        try await TestDatabase.with { database in
            let url = directory.url
            let (applied, recorded, columns, seeded, expectedChecksums) = try await database.withConnection { connection in
                let migrator = try Migrator(directory: url)
                let applied = try migrator.migrate(connection)
                let recorded = try connection.query("SELECT version, name, checksum FROM schema_migrations ORDER BY version") { row in
                    "\(try row.int(0)) \(try row.string(1)) \(try row.string(2))"
                }
                let columns = try connection.query("""
                    SELECT attname::text FROM pg_attribute
                    WHERE attrelid = 'a'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum
                    """) { try $0.string(0) }
                let seeded = try connection.queryFirst("SELECT note FROM a WHERE id = 1") { try $0.string(0) }
                // The checksum is the SHA-256 of the file's bytes, computed here by the server.
                let checksums = try ["0001_a.sql", "0002_b.sql"].map { name in
                    let bytes = [UInt8](try Data(contentsOf: url.appendingPathComponent(name)))
                    return try connection.queryFirst("SELECT encode(sha256(\(bytes)), 'hex')") { try $0.string(0) }!
                }
                return (applied, recorded, columns, seeded, checksums)
            }
            #expect(applied == [1, 2])
            #expect(recorded == ["1 0001_a \(expectedChecksums[0])", "2 0002_b \(expectedChecksums[1])"])
            #expect(columns == ["id", "note"])
            #expect(seeded == "seeded by 0002; semicolons in strings are fine")
        }
    }

    @Test func aSecondRunAppliesNothing() async throws {
        let directory = try makeDirectory()
        defer { directory.remove() }
        try await TestDatabase.with { database in
            let url = directory.url
            let runs = try await database.withConnection { connection in
                try Migrator(directory: url).migrate(connection)
            }
            let again = try await database.withConnection { connection in
                (try Migrator(directory: url).migrate(connection),
                 try connection.queryFirst("SELECT count(*) FROM schema_migrations") { try $0.int(0) }!)
            }
            #expect(runs == [1, 2])
            #expect(again.0 == [])
            #expect(again.1 == 2)
        }
    }

    @Test func aNewMigrationIsAppliedOnTheNextRun() async throws {
        let directory = try makeDirectory()
        defer { directory.remove() }
        try await TestDatabase.with { database in
            let url = directory.url
            _ = try await database.withConnection { try Migrator(directory: url).migrate($0) }
            try directory.write("0010_c.sql", "CREATE TABLE c (id int4);")
            let applied = try await database.withConnection { try Migrator(directory: url).migrate($0) }
            #expect(applied == [10])
        }
    }

    @Test func anEditedAppliedMigrationThrowsNamingTheFile() async throws {
        let directory = try makeDirectory()
        defer { directory.remove() }
        try await TestDatabase.with { database in
            let url = directory.url
            _ = try await database.withConnection { try Migrator(directory: url).migrate($0) }
            try directory.write("0001_a.sql", Self.first + "\n-- edited afterwards\n")
            let error = await #expect(throws: PGError.self) {
                try await database.withConnection { try Migrator(directory: url).migrate($0) }
            }
            #expect(error?.kind == .migration)
            #expect(error?.message.contains("0001_a.sql") == true, "message: \(error?.message ?? "")")
            #expect(error?.message.contains("0002_b") == false)
        }
    }

    @Test(arguments: ["1_short.sql", "abcd_letters.sql", "0003.sql", "00004_five.sql", "0000_zero.sql", "0003-dash.sql"])
    func aBadlyNamedFileThrows(name: String) throws {
        let directory = try makeDirectory()
        defer { directory.remove() }
        try directory.write(name, "SELECT 1;")
        let error = #expect(throws: PGError.self) { try Migrator(directory: directory.url) }
        #expect(error?.kind == .migration)
        #expect(error?.message.contains(name) == true, "message: \(error?.message ?? "")")
    }

    @Test func twoFilesWithTheSameNumberThrow() throws {
        let directory = try makeDirectory()
        defer { directory.remove() }
        try directory.write("0001_again.sql", "SELECT 1;")
        let error = #expect(throws: PGError.self) { try Migrator(directory: directory.url) }
        #expect(error?.kind == .migration)
    }

    @Test func aMissingOrEmptyDirectoryThrows() throws {
        let empty = try TemporaryDirectory()
        defer { empty.remove() }
        let emptyError = #expect(throws: PGError.self) { try Migrator(directory: empty.url) }
        #expect(emptyError?.kind == .migration)
        let missingError = #expect(throws: PGError.self) { try Migrator(directory: empty.url.appendingPathComponent("nope")) }
        #expect(missingError?.kind == .migration)
    }

    @Test func aFailingMigrationLeavesNothingBehind() async throws {
        let directory = try makeDirectory(second: "ALTER TABLE a ADD COLUMN note text; SELECT no_such_function();")
        defer { directory.remove() }
        try await TestDatabase.with { database in
            let url = directory.url
            let error = await #expect(throws: PGError.self) {
                try await database.withConnection { try Migrator(directory: url).migrate($0) }
            }
            #expect(error?.kind == .server)
            let (versions, columns) = try await database.withConnection { connection in
                (try connection.query("SELECT version FROM schema_migrations") { try $0.int(0) },
                 try connection.query("SELECT attname::text FROM pg_attribute WHERE attrelid = 'a'::regclass AND attnum > 0") {
                    try $0.string(0)
                 })
            }
            #expect(versions == [1])
            #expect(columns == ["id"])
        }
    }

    /// Two instances starting together: the advisory lock makes one wait, so each file runs once.
    /// The first migration sleeps so the two runs overlap for certain.
    @Test func concurrentMigratorsApplyEachMigrationOnce() async throws {
        let directory = try makeDirectory(first: "SELECT pg_sleep(0.5);\n" + Self.first)
        defer { directory.remove() }
        try await TestDatabase.with { database in
            let url = directory.url
            let databaseURL = database.url
            let connections = try await blocking {
                (try PGConnection.connect(url: databaseURL), try PGConnection.connect(url: databaseURL))
            }
            let start = DispatchSemaphore(value: 0)
            async let one = blocking {
                let migrator = try Migrator(directory: url)
                start.wait()
                return try migrator.migrate(connections.0)
            }
            async let two = blocking {
                let migrator = try Migrator(directory: url)
                start.wait()
                return try migrator.migrate(connections.1)
            }
            start.signal()
            start.signal()
            let results = try await [one, two]
            #expect(results.flatMap { $0 }.sorted() == [1, 2], "each version applied exactly once: \(results)")
            let versions = try await blocking {
                try connections.0.query("SELECT version FROM schema_migrations ORDER BY version") { try $0.int(0) }
            }
            #expect(versions == [1, 2])
            // Neither connection still holds the lock.
            let locks = try await blocking {
                try connections.0.queryFirst("""
                    SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                    WHERE l.locktype = 'advisory' AND d.datname = current_database()
                    """) { try $0.int(0) }!
            }
            #expect(locks == 0)
        }
    }

    @Test func theShippedMigrationsApplyToAFreshDatabase() async throws {
        let migrations = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // NimbusPostgresTests
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()  // package root
            .appendingPathComponent("migrations")
        try await TestDatabase.with { database in
            let (applied, tables, again) = try await database.withConnection { connection in
                let migrator = try Migrator(directory: migrations)
                let applied = try migrator.migrate(connection)
                let tables = try connection.query("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'") {
                    try $0.string(0)
                }
                return (applied, Set(tables), try Migrator(directory: migrations).migrate(connection))
            }
            #expect(applied.first == 1)
            #expect(applied == applied.sorted())
            let expected: Set = ["users", "device_tokens", "databases", "zones", "records", "assets", "asset_chunks",
                                 "subscriptions", "notifications", "schema_migrations"]
            #expect(expected.isSubset(of: tables), "missing: \(expected.subtracting(tables).sorted())")
            #expect(again == [])
        }
    }
}
