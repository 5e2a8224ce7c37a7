import CLibPQ
import NimbusSupport

/// Statements that wait for the server on an event loop instead of blocking a thread.
///
/// The statement is sent in libpq's nonblocking mode; while the server works, the task waits
/// for the socket through the loop's epoll (`LoopContext.waitUntilReady`), so the loop's
/// thread serves other connections meanwhile and resumes the task when the answer is there.
extension PGConnection {
    /// Runs a statement and decodes every row (as `query`), waiting on `loop`.
    package func query<Row>(_ sql: SQL, on loop: any LoopContext, decode: (PGRow) throws -> Row) async throws -> [Row] {
        let result = try await execute(sql, on: loop)
        defer { PQclear(result) }
        return try Self.rows(of: result, decode: decode)
    }

    /// Runs a statement and reads its whole result with `body` (as `read`), waiting on `loop`.
    package func read<T>(_ sql: SQL, on loop: any LoopContext, sortsOff: Bool = false, _ body: (PGRows) throws -> T) async throws -> T {
        let result = try await execute(sql, on: loop, sortsOff: sortsOff)
        defer { PQclear(result) }
        return try body(PGRows(result: result))
    }

    /// Runs a statement and decodes its first row, if any (as `queryFirst`), waiting on `loop`.
    package func queryFirst<Row>(_ sql: SQL, on loop: any LoopContext, decode: (PGRow) throws -> Row) async throws -> Row? {
        let result = try await execute(sql, on: loop)
        defer { PQclear(result) }
        return try Self.firstRow(of: result, decode: decode)
    }

    private func execute(_ sql: SQL, on loop: any LoopContext, sortsOff wanted: Bool = false) async throws -> OpaquePointer {
        if let change = sortsChange(off: wanted) {
            PQclear(try await execute(change, on: loop, sortsOff: sortsOff))
            sortsOff = wanted
        }
        let parameters = EncodedParameters(sql.parameters)
        let name = parameters.count == 0 ? nil : try await preparedName(sql, parameters.types, on: loop)
        PQsetnonblocking(handle, 1)
        defer { PQsetnonblocking(handle, 0) }
        let sent: Int32? = parameters.withValues { values in
            guard let name else {
                return PQsendQueryParams(handle, sql.text, parameters.count, parameters.types, values, parameters.lengths, parameters.formats, 1)
            }
            return PQsendQueryPrepared(handle, name, parameters.count, values, parameters.lengths, parameters.formats, 1)
        }
        guard sent == 1 else { throw lostError() }
        do {
            return try await finish(on: loop)
        } catch let error as PGError where name != nil && error.sqlState == Self.missingStatement {
            try pooledAway()
            return try await execute(sql, on: loop, sortsOff: wanted)
        }
    }

    /// Flushes what libpq still holds, then reads every result of the statement; returns the
    /// last one, checked.
    private func finish(on loop: any LoopContext) async throws -> OpaquePointer {
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { break }
            guard flushed == 1 else { throw lostError() }
            await loop.waitUntilReady(PQsocket(handle), writable: true)
        }
        // Input is read only after the socket says it is readable: the answer is never there
        // right after the statement leaves, and a read that finds nothing is a wasted call.
        var last: OpaquePointer?
        while true {
            if PQisBusy(handle) == 1 {
                await loop.waitUntilReady(PQsocket(handle), writable: false)
                guard PQconsumeInput(handle) == 1 else {
                    if let last { PQclear(last) }
                    throw lostError()
                }
                continue
            }
            guard let result = PQgetResult(handle) else { break }
            if let last { PQclear(last) }
            last = result
        }
        guard let last else { throw lostError() }
        do {
            try check(last)
        } catch {
            PQclear(last)
            throw error
        }
        return last
    }

    /// The prepared statement's name, preparing it first (as the blocking path does).
    private func preparedName(_ sql: SQL, _ types: [UInt32], on loop: any LoopContext) async throws -> String? {
        guard naming.isOn else { return nil }
        let key = Self.preparedKey(sql, types)
        if let name = prepared[key] { return name }
        PQsetnonblocking(handle, 1)
        defer { PQsetnonblocking(handle, 0) }
        if prepared.count >= Self.preparedLimit {
            guard PQsendQuery(handle, "DEALLOCATE ALL") == 1 else { throw lostError() }
            PQclear(try await finish(on: loop))
            prepared.removeAll()
        }
        let name = nextStatementName()
        guard PQsendPrepare(handle, name, sql.text, Int32(types.count), types) == 1 else { throw lostError() }
        do {
            PQclear(try await finish(on: loop))
        } catch let error as PGError where error.kind != .connectionLost {
            return nil  // cannot be prepared: it runs unprepared and reports its error there
        }
        prepared[key] = name
        return name
    }
}
