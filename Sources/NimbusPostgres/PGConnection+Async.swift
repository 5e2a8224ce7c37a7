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
        let rowCount = Int(PQntuples(result))
        var rows: [Row] = []
        rows.reserveCapacity(rowCount)
        for index in 0..<rowCount {
            rows.append(try decode(PGRow(result: result, row: Int32(index))))
        }
        return rows
    }

    /// Runs a statement and decodes its first row, if any (as `queryFirst`), waiting on `loop`.
    package func queryFirst<Row>(_ sql: SQL, on loop: any LoopContext, decode: (PGRow) throws -> Row) async throws -> Row? {
        let result = try await execute(sql, on: loop)
        defer { PQclear(result) }
        guard PQntuples(result) > 0 else { return nil }
        return try decode(PGRow(result: result, row: 0))
    }

    private func execute(_ sql: SQL, on loop: any LoopContext) async throws -> OpaquePointer {
        let encoded = sql.parameters.map(\.binary)
        let types: [UInt32] = encoded.map(\.oid)
        var name: String?
        if !encoded.isEmpty {
            name = try await preparedName(sql.text, types, on: loop)
        }
        var storage: [UInt8] = []
        var offsets: [Int] = []
        var lengths: [Int32] = []
        for (_, bytes) in encoded {
            offsets.append(storage.count)
            lengths.append(Int32(bytes?.count ?? 0))
            if let bytes { storage += bytes }
        }
        let formats = [Int32](repeating: 1, count: encoded.count)
        storage.append(0)  // never empty, so a zero-length value still gets a valid pointer
        PQsetnonblocking(handle, 1)
        defer { PQsetnonblocking(handle, 0) }
        // libpq copies the parameters into its output buffer during the send call: every pointer
        // is derived from `storage` inside this closure and used only in it.
        let sent: Int32 = storage.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            let values: [UnsafePointer<CChar>?] = encoded.indices.map { index in
                encoded[index].bytes == nil ? nil : UnsafeRawPointer(base + offsets[index]).assumingMemoryBound(to: CChar.self)
            }
            if let name {
                return PQsendQueryPrepared(handle, name, Int32(encoded.count), values, lengths, formats, 1)
            }
            return PQsendQueryParams(handle, sql.text, Int32(encoded.count), types, values, lengths, formats, 1)
        }
        guard sent == 1 else { throw lostError() }
        return try await finish(on: loop)
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
        var last: OpaquePointer?
        while true {
            guard PQconsumeInput(handle) == 1 else {
                if let last { PQclear(last) }
                throw lostError()
            }
            if PQisBusy(handle) == 1 {
                await loop.waitUntilReady(PQsocket(handle), writable: false)
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
    private func preparedName(_ text: String, _ types: [UInt32], on loop: any LoopContext) async throws -> String? {
        let key = text + "\u{0}" + types.map(String.init).joined(separator: ",")
        if let name = prepared[key] { return name }
        PQsetnonblocking(handle, 1)
        defer { PQsetnonblocking(handle, 0) }
        if prepared.count >= Self.preparedLimit {
            guard PQsendQuery(handle, "DEALLOCATE ALL") == 1 else { throw lostError() }
            PQclear(try await finish(on: loop))
            prepared.removeAll()
        }
        let name = "nimbus_\(prepared.count)"
        guard PQsendPrepare(handle, name, text, Int32(types.count), types) == 1 else { throw lostError() }
        do {
            PQclear(try await finish(on: loop))
        } catch let error as PGError where error.kind != .connectionLost {
            return nil  // cannot be prepared: it runs unprepared and reports its error there
        }
        prepared[key] = name
        return name
    }
}
