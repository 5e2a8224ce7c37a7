import Foundation
import NimbusPostgres
import Testing

@Suite struct PGConnectionTests {
    // MARK: Connecting

    @Test func connectsAndSelectsOne() async throws {
        try await TestDatabase.with { database in
            let (one, version) = try await database.withConnection { connection in
                (try connection.queryFirst("SELECT 1") { try $0.int(0) }, connection.serverVersion)
            }
            #expect(one == 1)
            #expect(version >= 130000)
        }
    }

    @Test func connectingToAMissingDatabaseThrowsConnectionFailed() async throws {
        let url = try TestDatabase.adminURL().replacingOccurrences(of: "/postgres?", with: "/nimbus_no_such_database?")
        let error = await #expect(throws: PGError.self) {
            try await blocking { try PGConnection.connect(url: url) }
        }
        #expect(error?.kind == .connectionFailed)
        #expect(error?.isTransient == true)
        #expect(error?.message.contains("nimbus_no_such_database") == true, "message: \(error?.message ?? "")")
    }

    @Test func connectingWithAMalformedURLThrowsConnectionFailed() async throws {
        for url in ["postgresql://[::1", "host=/tmp port=notaport", "no equals sign here"] {
            let error = await #expect(throws: PGError.self, "\(url)") {
                try await blocking { try PGConnection.connect(url: url) }
            }
            #expect(error?.kind == .connectionFailed, "\(url)")
            #expect(error?.message.isEmpty == false)
        }
    }

    /// Each failed attempt must PQfinish its PGconn: a leaked one would keep its socket open.
    @Test func failedConnectsDoNotLeakDescriptors() async throws {
        let url = try TestDatabase.adminURL().replacingOccurrences(of: "/postgres?", with: "/nimbus_no_such_database?")
        let attempts = 200
        // Suites running in parallel open and close descriptors too (HTTP tests open hundreds of
        // sockets at once), so a single before/after difference is noise. A leak is permanent and
        // adds one descriptor per attempt: take the largest count seen before and the smallest seen
        // over a few seconds after, and fail only when even that grew by most of the attempts.
        let before = await largestDescriptorCount(samples: 5)
        let failures = try await blocking {
            var failures = 0
            for _ in 0..<attempts {
                do { _ = try PGConnection.connect(url: url) } catch let error as PGError where error.kind == .connectionFailed {
                    failures += 1
                }
            }
            return failures
        }
        #expect(failures == attempts)
        // libpq keeps a failed attempt's socket until PQfinish (fe-connect.c, error_return), so a
        // missing PQfinish leaks one descriptor per attempt.
        var after = Int.max
        for _ in 0..<50 where after - before >= attempts / 2 {
            after = min(after, openDescriptorCount())
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(after - before < attempts / 2, "descriptors before \(before), after \(after)")
    }

    private func largestDescriptorCount(samples: Int) async -> Int {
        var largest = 0
        for _ in 0..<samples {
            largest = max(largest, openDescriptorCount())
            try? await Task.sleep(for: .milliseconds(20))
        }
        return largest
    }

    @Test func connectingToAMissingSocketDirectoryFailsFast() async throws {
        let url = "postgresql:///postgres?host=/tmp/nimbus-no-such-dir-\(UUID().uuidString.prefix(8))&user=nimbus"
        // Timed inside the blocking call: on a loaded machine, waiting for a blocking thread took
        // longer than the connect itself.
        let (error, seconds) = try await blocking { () -> (PGError?, Double) in
            let start = DispatchTime.now().uptimeNanoseconds
            let seconds = { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }
            do {
                _ = try PGConnection.connect(url: url, connectTimeoutSeconds: 2)
                return (nil, seconds())
            } catch {
                return (error as? PGError, seconds())
            }
        }
        #expect(error?.kind == .connectionFailed)
        #expect(seconds < 10, "took \(seconds) s")  // fails fast, not after a long timeout; loose for loaded CI
    }

    /// A socket that accepts but never answers the startup packet: only connect_timeout ends the wait.
    @Test func connectTimeoutBoundsAServerThatNeverAnswers() async throws {
        let silent = try SilentSocket()
        defer { silent.close() }
        let url = "postgresql:///postgres?host=\(silent.directory)&user=nimbus"
        var error: PGError?
        let seconds = await elapsedSeconds {
            error = await #expect(throws: PGError.self) {
                try await blocking { try PGConnection.connect(url: url, connectTimeoutSeconds: 2) }
            }
        }
        #expect(error?.kind == .connectionFailed)
        #expect(error?.isTransient == true)
        // The point is that the wait ends (by the timeout, not never); the upper bound is loose
        // because a loaded 2-core CI machine stretches timings.
        #expect(seconds >= 1.5 && seconds < 30, "took \(seconds) s with connect_timeout 2")
    }

    // MARK: Statements

    @Test func runReturnsAffectedRowCounts() async throws {
        try await TestDatabase.with { database in
            let counts = try await database.withConnection { connection in
                [
                    try connection.run("CREATE TABLE t (id int8 PRIMARY KEY, tag text)"),
                    try connection.run("INSERT INTO t VALUES (1, 'a'), (2, 'a'), (3, 'b')"),
                    try connection.run("UPDATE t SET tag = 'c' WHERE tag = \("a")"),
                    try connection.run("UPDATE t SET tag = 'c' WHERE id = \(99)"),
                    try connection.run("DELETE FROM t WHERE id >= \(2)"),
                    try connection.run("SELECT * FROM t"),
                ]
            }
            #expect(counts == [0, 3, 2, 0, 2, 1])
        }
    }

    @Test func queryFirstIsNilAndQueryIsEmptyWithoutRows() async throws {
        try await TestDatabase.with { database in
            let (first, all, present) = try await database.withConnection { connection in
                try connection.run("CREATE TABLE t (id int8)")
                let first = try connection.queryFirst("SELECT id FROM t") { try $0.int64(0) }
                let all = try connection.query("SELECT id FROM t") { try $0.int64(0) }
                try connection.run("INSERT INTO t VALUES (7), (8)")
                let present = try connection.queryFirst("SELECT id FROM t ORDER BY id DESC") { try $0.int64(0) }
                return (first, all, present)
            }
            #expect(first == nil)
            #expect(all.isEmpty)
            #expect(present == 8)
        }
    }

    @Test func runScriptExecutesSeveralStatements() async throws {
        try await TestDatabase.with { database in
            let count = try await database.withConnection { connection in
                try connection.runScript("CREATE TABLE s (v int4); INSERT INTO s VALUES (1); INSERT INTO s VALUES (2);")
                return try connection.queryFirst("SELECT count(*) FROM s") { try $0.int(0) }
            }
            #expect(count == 2)
        }
    }

    // MARK: Errors

    @Test func uniqueViolationCarriesSQLState23505() async throws {
        try await TestDatabase.with { database in
            let (error, usable) = try await database.withConnection { connection in
                try connection.run("CREATE TABLE u (name text UNIQUE)")
                try connection.run("INSERT INTO u VALUES (\("x"))")
                var caught: (any Error)?
                do { try connection.run("INSERT INTO u VALUES (\("x"))") } catch { caught = error }
                // The connection stays usable after a statement error.
                let usable = try connection.queryFirst("SELECT count(*) FROM u") { try $0.int(0) }
                return (caught as? PGError, usable)
            }
            let pgError = try #require(error)
            #expect(pgError.kind == .server)
            #expect(pgError.sqlState == PGError.SQLState.uniqueViolation)
            #expect(pgError.sqlState == "23505")
            #expect(pgError.isTransient == false)
            #expect(pgError.detail?.contains("(name)=(x)") == true, "detail: \(pgError.detail ?? "nil")")
            #expect(usable == 1)
        }
    }

    @Test func syntaxErrorCarriesSQLState42601() async throws {
        try await TestDatabase.with { database in
            let error = await #expect(throws: PGError.self) {
                try await database.withConnection { connection in try connection.run("SELEC 1") }
            }
            #expect(error?.kind == .server)
            #expect(error?.sqlState == "42601")
            #expect(error?.isTransient == false)
            #expect(error?.message.contains("syntax error") == true, "message: \(error?.message ?? "")")
        }
    }
}

func openDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
}
