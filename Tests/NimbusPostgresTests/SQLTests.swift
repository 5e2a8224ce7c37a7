import Foundation
import NimbusPostgres
import Testing

@Suite struct SQLTests {
    // MARK: Text and parameters (no database)

    @Test func interpolatedValuesBecomeNumberedParametersInOrder() {
        let sql: SQL = "SELECT * FROM t WHERE a = \(1) AND b = \("two") AND c = \(true) AND d IS \(PGData.null)"
        #expect(sql.text == "SELECT * FROM t WHERE a = $1 AND b = $2 AND c = $3 AND d IS $4")
        #expect(sql.parameters == [.int64(1), .text("two"), .bool(true), .null])
    }

    @Test func plainNamesBecomeConstantsAndAnythingElseAParameter() {
        let plain: SQL = "SELECT fields->\(name: "timestamp") FROM records WHERE record_type = \(name: "Blocked_App2") LIMIT \(constant: 101)"
        #expect(plain.text == "SELECT fields->'timestamp' FROM records WHERE record_type = 'Blocked_App2' LIMIT 101")
        #expect(plain.parameters.isEmpty)
        for hostile in ["x' OR '1'='1", "a b", "", "1abc", "é", "a;DROP", String(repeating: "a", count: 256), "a\u{0}"] {
            let statement: SQL = "SELECT fields->\(name: hostile)"
            #expect(statement.text == "SELECT fields->$1", "\(hostile) was written into the text")
            #expect(statement.parameters == [.text(hostile)])
        }
    }

    @Test func aLiteralHasNoParameters() {
        let sql: SQL = "SELECT '$1'"
        #expect(sql.text == "SELECT '$1'")
        #expect(sql.parameters.isEmpty)
    }

    @Test func appendRenumbersTheAppendedParameters() {
        var sql: SQL = "SELECT \(1), \(2)"
        sql.append(" WHERE x = \(3) OR y = \(4)")
        #expect(sql.text == "SELECT $1, $2 WHERE x = $3 OR y = $4")
        #expect(sql.parameters == [.int64(1), .int64(2), .int64(3), .int64(4)])
    }

    /// "$1" must not be rewritten inside "$10"/"$11", nor a new "$1x" be rewritten again.
    @Test func appendRenumbersPastTenWithoutClobberingPrefixes() {
        var fragment: SQL = ""
        fragment.append("\(Int64(1))")
        for value in 2...12 { fragment.append(",\(Int64(value))") }
        #expect(fragment.text == "$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12")

        var sql: SQL = "SELECT \(Int64(100)), \(Int64(200)) FROM t WHERE "
        sql.append(fragment)
        #expect(sql.text == "SELECT $1, $2 FROM t WHERE $3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14")
        #expect(sql.parameters == [100, 200, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map { PGData.int64($0) })

        var nine: SQL = "\(0),\(0),\(0),\(0),\(0),\(0),\(0),\(0),\(0)"
        let tail: SQL = " $1 $10 $2 $11 \(Int64(1))\(Int64(2))\(Int64(3))\(Int64(4))\(Int64(5))\(Int64(6))\(Int64(7))\(Int64(8))\(Int64(9))\(Int64(10))\(Int64(11))"
        nine.append(tail)
        #expect(nine.text == "$1,$2,$3,$4,$5,$6,$7,$8,$9 $10 $19 $11 $20 $10$11$12$13$14$15$16$17$18$19$20")
    }

    @Test func anInterpolatedFragmentIsRenumberedIntoTheStatement() {
        let filter: SQL = "zone = \(Int64(7)) AND name = \("n")"
        let sql: SQL = "SELECT \(Int64(1)) FROM records WHERE \(filter) AND deleted = \(false)"
        #expect(sql.text == "SELECT $1 FROM records WHERE zone = $2 AND name = $3 AND deleted = $4")
        #expect(sql.parameters == [.int64(1), .int64(7), .text("n"), .bool(false)])

        var wide: SQL = ""
        for value in 1...11 { wide.append(value == 1 ? "\(Int64(value))" : ",\(Int64(value))") }
        let nested: SQL = "\(Int64(0)),\(wide),\(Int64(12))"
        #expect(nested.text == "$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13")
        #expect(nested.parameters == (0...12).map { PGData.int64(Int64($0)) })
    }

    @Test func unsafeColumnsAreSplicedVerbatimWithoutParameters() {
        let sql: SQL = "SELECT \(unsafeColumns: "id, name") FROM t WHERE id = \(Int64(3))"
        #expect(sql.text == "SELECT id, name FROM t WHERE id = $1")
        #expect(sql.parameters == [.int64(3)])
    }

    @Test func identifiersAreQuotedWithEmbeddedQuotesDoubled() {
        let sql: SQL = "CREATE TABLE \(identifier: "plain"), \(identifier: #"we"ird"#), \(identifier: #""""#)"
        #expect(sql.text == #"CREATE TABLE "plain", "we""ird", """""""#)
        #expect(sql.parameters.isEmpty)
    }

    // MARK: Against the server

    @Test func appendedParametersReachTheServerInOrder() async throws {
        try await TestDatabase.with { database in
            var sql: SQL = "SELECT \(Int64(0))"
            for value in 1...14 { sql.append(", \(Int64(value))") }
            sql.append(", \("fifteen"), \(Int64(16))")
            let query = sql
            let values = try await database.withConnection { connection in
                try connection.queryFirst(query) { row in
                    (try (0..<15).map { try row.int64($0) }, try row.string(15), try row.int64(16))
                }!
            }
            #expect(values.0 == Array(0...14))
            #expect(values.1 == "fifteen")
            #expect(values.2 == 16)
        }
    }

    @Test func interpolatedFragmentsReachTheServerInOrder() async throws {
        try await TestDatabase.with { database in
            var columns: SQL = "\(Int64(1))"
            for value in 2...10 { columns.append(", \(Int64(value))") }
            let query: SQL = "SELECT \(Int64(0)), \(columns), \("eleven") WHERE \(true)"
            let values = try await database.withConnection { connection in
                try connection.queryFirst(query) { row in (try (0...10).map { try row.int64($0) }, try row.string(11)) }!
            }
            #expect(values.0 == Array(0...10))
            #expect(values.1 == "eleven")
        }
    }

    @Test func aTableNamedWithAQuoteWorks() async throws {
        try await TestDatabase.with { database in
            let table = #"odd "name"; DROP TABLE other; --"#
            let (rows, tables) = try await database.withConnection { connection in
                try connection.run("CREATE TABLE other (id int4)")
                try connection.run("CREATE TABLE \(identifier: table) (\(identifier: "col\"umn") text)")
                try connection.run("INSERT INTO \(identifier: table) (\(identifier: "col\"umn")) VALUES (\("v"))")
                let rows = try connection.query("SELECT \(identifier: "col\"umn") FROM \(identifier: table)") { try $0.string(0) }
                let tables = try connection.query("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1") {
                    try $0.string(0)
                }
                return (rows, tables)
            }
            #expect(rows == ["v"])
            #expect(tables == [table, "other"].sorted())
        }
    }

    @Test func valuesCannotInjectSQL() async throws {
        try await TestDatabase.with { database in
            let hostile = ["'); DROP TABLE x; --", "' OR '1'='1", "$1", "\\'; SELECT pg_sleep(10); --", "\"; DROP TABLE x; --"]
            let (stored, matches, tableCount) = try await database.withConnection { connection in
                try connection.run("CREATE TABLE x (id int4, v text)")
                for (index, value) in hostile.enumerated() {
                    try connection.run("INSERT INTO x VALUES (\(Int32(index)), \(value))")
                }
                let stored = try connection.query("SELECT v FROM x ORDER BY id") { try $0.string(0) }
                let matches = try connection.queryFirst("SELECT count(*) FROM x WHERE v = \("' OR '1'='1")") { try $0.int(0) }!
                let tableCount = try connection.queryFirst("SELECT count(*) FROM pg_tables WHERE tablename = 'x'") { try $0.int(0) }!
                return (stored, matches, tableCount)
            }
            #expect(stored == hostile)
            #expect(matches == 1)
            #expect(tableCount == 1)
        }
    }
}
