import NimbusSupport

extension PGPool {
    /// `read` with the planner's sorts off for this one statement, so that an `ORDER BY … LIMIT n`
    /// which an index provides reads n rows in the index's order whatever the row estimates. The
    /// session keeps the setting until a statement that wants sorts runs on the connection
    /// (`PGConnection+Sorts`); in a transaction or behind a transaction pooler it is set before the
    /// statement and reset after it.
    ///
    /// Why (issue #28, item 8): a page of `records/changes` is the first n rows of
    /// `records_by_change` after a sequence. Its prepared statement's generic plan cannot see the
    /// zone's size: the estimate of `zone_id = $1 AND change_seq > $2 AND change_seq <= …` is a few
    /// rows (always so in a database of many zones; in a zone loaded before autovacuum analyzed
    /// it), so PostgreSQL chose a bitmap scan of every later row of the zone and a top-n sort:
    /// 210 ms for the first page of a 100,000-record zone and every page reading the whole rest,
    /// a first sync of 100,000 records taking 14-28 s where 1.5 s is the index scan's time.
    package func readInIndexOrder<T: Sendable>(_ sql: SQL, on execution: Execution = .offloaded,
                                               _ body: @escaping @Sendable (PGRows) throws -> T) async throws -> T {
        if let loop = execution.currentLoop {
            return try await withConnection(on: loop) { connection in
                if connection.keepsSessionSettings { return try await connection.read(sql, on: loop, sortsOff: true, body) }
                _ = try await connection.query("SET enable_sort = off", on: loop) { _ in () }
                let value: T
                do {
                    value = try await connection.read(sql, on: loop, body)
                } catch {
                    _ = try? await connection.query("RESET enable_sort", on: loop) { _ in () }
                    throw error
                }
                _ = try await connection.query("RESET enable_sort", on: loop) { _ in () }
                return value
            }
        }
        return try await withConnection(on: execution) { connection in
            if connection.keepsSessionSettings { return try connection.read(sql, sortsOff: true, body) }
            _ = try connection.run("SET enable_sort = off")
            let value: T
            do {
                value = try connection.read(sql, body)
            } catch {
                _ = try? connection.run("RESET enable_sort")
                throw error
            }
            _ = try connection.run("RESET enable_sort")
            return value
        }
    }
}
