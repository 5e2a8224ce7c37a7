import NimbusPostgres
import NimbusSupport
import Testing

/// `PGConnection+Sorts`: a statement read in index order runs with the planner's sorts off, every
/// other statement with them on; a run of such reads sets them off once; a transaction, failed or
/// not, leaves them on; the pool's read in index order leaves its connection's next statement
/// with sorts on.
@Suite struct PGSortsTests {
    static let setting: SQL = "SELECT current_setting('enable_sort')"

    @Test func readsInIndexOrderRunWithSortsOffAndEveryOtherStatementWithThemOn() async throws {
        try await TestDatabase.with { database in
            let connection = try PGConnection.connect(url: database.url)
            let read = { try connection.read(Self.setting, sortsOff: true) { try $0[0].string(0) } }
            #expect(try read() == "off")
            #expect(connection.sortsOff)
            #expect(try read() == "off")
            #expect(try connection.queryFirst(Self.setting) { try $0.string(0) } == "on")
            #expect(!connection.sortsOff)
            #expect(try read() == "off")
            try connection.runScript("CREATE TEMP TABLE t (a int)")
            #expect(try connection.queryFirst(Self.setting) { try $0.string(0) } == "on")
        }
    }

    @Test func aTransactionCommittedOrFailedLeavesTheSortsOn() async throws {
        try await TestDatabase.with { database in
            let connection = try PGConnection.connect(url: database.url)
            let read = { (c: PGConnection) in try c.read(Self.setting, sortsOff: true) { try $0[0].string(0) } }
            #expect(try read(connection) == "off")
            let inside = try connection.withTransaction { try read($0) }
            #expect(inside == "off")
            #expect(try connection.queryFirst(Self.setting) { try $0.string(0) } == "on")
            #expect(throws: PGError.self) {
                try connection.withTransaction { transaction in
                    _ = try read(transaction)
                    // Fails with the sorts off: the ROLLBACK after it is the one statement it takes.
                    _ = try transaction.read("SELECT 1 / 0", sortsOff: true) { $0.count }
                }
            }
            #expect(!connection.isInTransaction)
            #expect(try connection.queryFirst(Self.setting) { try $0.string(0) } == "on")
        }
    }

    @Test func thePoolsReadInIndexOrderLeavesTheNextStatementWithSortsOn() async throws {
        try await TestDatabase.with { database in
            var configuration = PGPool.Configuration(url: database.url)
            configuration.maxConnections = 1
            let pool = PGPool(configuration: configuration)
            defer { pool.close() }
            for execution in [Execution.offloaded, .blocking] {
                let inOrder = try await pool.readInIndexOrder(Self.setting, on: execution) { try $0[0].string(0) }
                #expect(inOrder == "off")
                #expect(try await pool.queryFirst(Self.setting, on: execution) { try $0.string(0) } == "on")
            }
        }
    }
}
