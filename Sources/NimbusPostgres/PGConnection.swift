import CLibPQ
import Foundation
import Synchronization

/// One libpq connection. It owns its `PGconn*` and finishes it in `deinit`.
///
/// Calls block (libpq is synchronous here), so connections are used from threads that may block:
/// the pool's Dispatch queue, the listener's thread, start-up code — never the cooperative pool.
package final class PGConnection: @unchecked Sendable {
    // @unchecked: a connection is used by one thread at a time — the pool hands it to exactly one
    // borrower, and the listener and migrator own theirs outright.
    let handle: OpaquePointer
    /// Named prepared statements of this connection by text and parameter types: a statement
    /// is parsed and planned once per connection instead of on every execution.
    var prepared: [PreparedKey: String] = [:]
    static let preparedLimit = 512
    /// Whether statements are prepared under names at all (shared by a pool's connections).
    let naming: StatementNaming
    /// Names are unique to this connection and never reused: behind a transaction pooler, a name
    /// found on a server connection can only be this connection's statement with the same text.
    private let namePrefix = "nimbus_\(String(UInt32.random(in: .min ... .max), radix: 16))_"
    private var statementsNamed = 0
    /// Whether this session's planner has its sorts off, left so after a read in index order (`PGConnection+Sorts`).
    package internal(set) var sortsOff = false

    private init(handle: OpaquePointer, naming: StatementNaming) {
        self.handle = handle
        self.naming = naming
    }

    deinit {
        PQfinish(handle)
    }

    /// Opens a connection. `url` is a libpq connection string or `postgresql://` URI; the
    /// connect timeout applies to each host attempt (libpq `connect_timeout`).
    package static func connect(url: String, connectTimeoutSeconds: Int = 5, applicationName: String = "nimbus",
                                naming: StatementNaming = StatementNaming()) throws -> PGConnection {
        let keywords = ["dbname", "connect_timeout", "application_name", "client_encoding"]
        let values = [url, String(max(connectTimeoutSeconds, 2)), applicationName, "UTF8"]
        // expand_dbname = 1: `dbname` may be a full connection string or URI; later keywords
        // (the timeout) override what it says. Pointers live only inside this scope.
        let connection: OpaquePointer? = withCStringArray(keywords) { keywordPointers in
            withCStringArray(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let connection else {
            throw PGError(.connectionFailed, "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(connection)
            throw PGError(.connectionFailed, message.isEmpty ? "could not connect to PostgreSQL" : message)
        }
        // Server NOTICEs ("relation already exists, skipping") are not errors; libpq's default
        // processor prints them to stderr. Errors still arrive as results.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        return PGConnection(handle: connection, naming: naming)
    }

    /// True once libpq has seen the connection fail. After a server restart this stays false
    /// until a statement fails, so users must also treat `.connectionLost` errors as fatal.
    package var isBroken: Bool {
        PQstatus(handle) != CONNECTION_OK
    }

    /// True while a transaction is open (or failed and not yet rolled back).
    package var isInTransaction: Bool {
        PQtransactionStatus(handle) != PQTRANS_IDLE
    }

    /// The socket, for waiting on notifications with poll(2).
    package var socketDescriptor: Int32 {
        PQsocket(handle)
    }

    /// The server's version number, e.g. 150018.
    package var serverVersion: Int {
        Int(PQserverVersion(handle))
    }

    /// Runs a statement and decodes every row with `decode` while the result is alive.
    package func query<Row>(_ sql: SQL, decode: (PGRow) throws -> Row) throws -> [Row] {
        let result = try execute(sql)
        defer { PQclear(result) }
        return try Self.rows(of: result, decode: decode)
    }

    /// Runs a statement and reads its whole result with `body` while the result is alive: one
    /// pass over the rows that may carry state from row to row (an answer written as it is read).
    package func read<T>(_ sql: SQL, sortsOff: Bool = false, _ body: (PGRows) throws -> T) throws -> T {
        let result = try execute(sql, sortsOff: sortsOff)
        defer { PQclear(result) }
        return try body(PGRows(result: result))
    }

    /// Runs a statement and decodes its first row, if any.
    package func queryFirst<Row>(_ sql: SQL, decode: (PGRow) throws -> Row) throws -> Row? {
        let result = try execute(sql)
        defer { PQclear(result) }
        return try Self.firstRow(of: result, decode: decode)
    }

    /// Every row of a result, decoded while it is alive.
    static func rows<Row>(of result: OpaquePointer, decode: (PGRow) throws -> Row) throws -> [Row] {
        let rowCount = Int(PQntuples(result))
        var rows: [Row] = []
        rows.reserveCapacity(rowCount)
        let columnCount = Int(PQnfields(result))
        for index in 0..<rowCount {
            rows.append(try decode(PGRow(result: result, row: Int32(index), columnCount: columnCount)))
        }
        return rows
    }

    /// The first row of a result, if any, decoded while it is alive.
    static func firstRow<Row>(of result: OpaquePointer, decode: (PGRow) throws -> Row) throws -> Row? {
        guard PQntuples(result) > 0 else { return nil }
        return try decode(PGRow(result: result, row: 0, columnCount: Int(PQnfields(result))))
    }

    /// Runs a statement for its effect; returns the number of rows it affected.
    @discardableResult
    package func run(_ sql: SQL) throws -> Int {
        let result = try execute(sql)
        defer { PQclear(result) }
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    package func withTransaction<T>(_ body: (PGConnection) throws -> T) throws -> T {
        try run("BEGIN")
        do {
            let value = try body(self)
            let result = try execute("COMMIT")
            let status = String(cString: PQcmdStatus(result))
            PQclear(result)
            guard status == "COMMIT" else {
                throw PGError(.server, "the transaction was rolled back because a statement in it failed", sqlState: "25P02")
            }
            return value
        } catch {
            if !isBroken { _ = try? run("ROLLBACK") }
            throw error
        }
    }

    /// Runs a script of several statements through the simple query protocol. Only for trusted
    /// SQL text shipped with the server (migrations); it takes no parameters.
    package func runScript(_ text: String) throws {
        try placeSorts(off: false)
        guard let result = PQexec(handle, text) else { throw lostError() }
        defer { PQclear(result) }
        try check(result)
    }

    /// Reads pending input and returns the notifications received so far (LISTEN/NOTIFY).
    /// Throws `.connectionLost` when the socket is closed.
    package func consumeNotifications() throws -> [PGNotification] {
        guard PQconsumeInput(handle) == 1 else { throw lostError() }
        return drainNotifications()
    }

    /// Notifications buffered by libpq, freed with `PQfreemem` as they are copied.
    package func drainNotifications() -> [PGNotification] {
        var notifications: [PGNotification] = []
        while let pointer = PQnotifies(handle) {
            let notify = pointer.pointee
            notifications.append(PGNotification(
                channel: String(cString: notify.relname),
                payload: String(cString: notify.extra),
                backendPID: notify.be_pid
            ))
            PQfreemem(pointer)
        }
        return notifications
    }

    // MARK: - Execution

    /// Sends the statement with binary parameters and asks for binary results.
    private func execute(_ sql: SQL, sortsOff wanted: Bool = false) throws -> OpaquePointer {
        try placeSorts(off: wanted)
        let parameters = EncodedParameters(sql.parameters)
        let name = parameters.count == 0 ? nil : preparedName(sql, parameters.types)
        let result: OpaquePointer? = parameters.withValues { values in
            guard let name else {
                return PQexecParams(handle, sql.text, parameters.count, parameters.types, values, parameters.lengths, parameters.formats, 1)
            }
            return PQexecPrepared(handle, name, parameters.count, values, parameters.lengths, parameters.formats, 1)
        }
        guard let result else { throw lostError() }
        do {
            try check(result)
        } catch let error as PGError where name != nil && error.sqlState == Self.missingStatement {
            PQclear(result)
            try pooledAway()
            return try execute(sql, sortsOff: wanted)
        } catch {
            PQclear(result)
            throw error
        }
        return result
    }

    /// SQLSTATE 26000, invalid_sql_statement_name: a statement prepared on this connection is not
    /// on the server connection that ran it — a transaction pooler (PgBouncer) sits in between.
    static let missingStatement = "26000"

    /// A prepared statement went missing: named statements are turned off for every connection of
    /// the pool. Outside a transaction the statement can run again unnamed (the caller does);
    /// inside one, the transaction has failed and the error says to retry.
    func pooledAway() throws {
        prepared.removeAll()
        naming.turnOff()
        sortsOff = false  // session settings no longer follow this connection
        guard !isInTransaction else {
            throw PGError(.connectionLost, "the database connection goes through a transaction pooler; named prepared statements "
                          + "are off from now on (pass --database-pooler transaction to start that way)")
        }
    }

    /// The name of the statement prepared for this text and these types, preparing it first;
    /// nil when it cannot be prepared (then the statement runs unprepared and reports its error).
    private func preparedName(_ sql: SQL, _ types: [UInt32]) -> String? {
        guard naming.isOn else { return nil }
        let key = Self.preparedKey(sql, types)
        if let name = prepared[key] { return name }
        if prepared.count >= Self.preparedLimit {
            // A bounded cache: dynamic statements must not grow it without end.
            if let result = PQexec(handle, "DEALLOCATE ALL") { PQclear(result) }
            prepared.removeAll()
        }
        let name = nextStatementName()
        guard let result = PQprepare(handle, name, sql.text, Int32(types.count), types) else { return nil }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { return nil }
        prepared[key] = name
        return name
    }

    /// A name this connection has not used before.
    func nextStatementName() -> String {
        statementsNamed += 1
        return namePrefix + String(statementsNamed)
    }

    /// The prepared-statement cache's key: the text and the parameter types.
    /// Hashed as bytes: hashing the text of a kilobyte statement as a `String`, after making
    /// that `String`, cost a tenth of a one-record write.
    struct PreparedKey: Hashable {
        var text: [UInt8]
        var types: [UInt32]

        /// The length, the parameter types and sixteen words spread over the text: statements run
        /// to kilobytes, and hashing all of them (twice per single-record create) was a twentieth
        /// of that request's instructions. Equal keys still hash alike; keys that differ only
        /// between the sampled words share a bucket, and `==` compares every byte.
        func hash(into hasher: inout Hasher) {
            hasher.combine(text.count)
            types.withUnsafeBytes { hasher.combine(bytes: $0) }
            text.withUnsafeBytes { bytes in
                guard bytes.count >= 8 else { return hasher.combine(bytes: bytes) }
                let last = bytes.count - 8, step = max(last / 15, 1)
                for offset in stride(from: 0, through: last, by: step) {
                    hasher.combine(bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                }
                hasher.combine(bytes.loadUnaligned(fromByteOffset: last, as: UInt64.self))
            }
        }

        static func == (lhs: PreparedKey, rhs: PreparedKey) -> Bool {
            guard lhs.types == rhs.types, lhs.text.count == rhs.text.count else { return false }
            return lhs.text.withUnsafeBytes { left in
                rhs.text.withUnsafeBytes { right in
                    guard let a = left.baseAddress, let b = right.baseAddress else { return true }
                    return memcmp(a, b, left.count) == 0
                }
            }
        }
    }

    static func preparedKey(_ sql: SQL, _ types: [UInt32]) -> PreparedKey {
        PreparedKey(text: sql.utf8, types: types)
    }

    func check(_ result: OpaquePointer) throws {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            let message = String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
            let sqlState = field(result, nimbus_PG_DIAG_SQLSTATE)
            // The server always sends a SQLSTATE; an error without one comes from libpq itself, a
            // communication failure. A write to a socket the server already closed reports "server
            // closed the connection unexpectedly" while PQstatus may still say OK.
            if isBroken || sqlState == nil {
                throw PGError(.connectionLost, message.isEmpty ? "the connection to PostgreSQL was lost" : message)
            }
            let primary = field(result, nimbus_PG_DIAG_MESSAGE_PRIMARY) ?? message
            throw PGError(.server, primary, sqlState: sqlState, detail: field(result, nimbus_PG_DIAG_MESSAGE_DETAIL))
        }
    }

    private func field(_ result: OpaquePointer, _ code: Int32) -> String? {
        guard let pointer = PQresultErrorField(result, code) else { return nil }
        return String(cString: pointer)
    }

    func lostError() -> PGError {
        let message = String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines)
        return PGError(.connectionLost, message.isEmpty ? "the connection to PostgreSQL was lost" : message)
    }
}

/// Whether a pool's connections prepare statements under names. A transaction pooler (PgBouncer
/// before 1.21) runs each transaction on whichever server connection is free, where a statement
/// prepared by an earlier transaction is missing: then statements go unnamed (parsed each time).
package final class StatementNaming: Sendable {
    private let on: Atomic<Bool>
    private let turnedOff: @Sendable () -> Void

    /// `on` false: never name statements (`--database-pooler transaction`). `turnedOff` is called
    /// once if a missing statement turns naming off.
    package init(on: Bool = true, turnedOff: @escaping @Sendable () -> Void = {}) {
        self.on = Atomic(on)
        self.turnedOff = turnedOff
    }

    package var isOn: Bool { on.load(ordering: .relaxed) }

    func turnOff() {
        if on.exchange(false, ordering: .relaxed) { turnedOff() }
    }
}

/// A NOTIFY received on a LISTEN connection.
package struct PGNotification: Sendable, Hashable {
    package var channel: String
    package var payload: String
    package var backendPID: Int32
}

/// Calls `body` with a NULL-terminated array of C strings valid only inside the call.
private func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let duplicates = strings.map { strdup($0) }
    defer { duplicates.forEach { free($0) } }
    let pointers: [UnsafePointer<CChar>?] = duplicates.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// A statement's parameters in libpq's binary format: one buffer holding every value, with
/// their types, lengths and formats (all binary).
struct EncodedParameters {
    let count: Int32
    let types: [UInt32]
    let lengths: [Int32]
    let formats: [Int32]
    private let storage: [UInt8]
    private let offsets: [Int?]

    init(_ parameters: [PGData]) {
        var storage: [UInt8] = []
        var offsets: [Int?] = []
        var lengths: [Int32] = []
        var types: [UInt32] = []
        for parameter in parameters {
            let (oid, bytes) = parameter.binary
            types.append(oid)
            offsets.append(bytes == nil ? nil : storage.count)
            lengths.append(Int32(bytes?.count ?? 0))
            if let bytes { storage += bytes }
        }
        storage.append(0)  // never empty, so a zero-length value still gets a valid pointer
        self.count = Int32(parameters.count)
        self.types = types
        self.lengths = lengths
        self.formats = [Int32](repeating: 1, count: parameters.count)
        self.storage = storage
        self.offsets = offsets
    }

    /// Calls `body` with a pointer per value (nil for SQL NULL). The pointers are derived from
    /// the buffer inside this call and valid only in it; libpq copies what it sends.
    func withValues<Result>(_ body: ([UnsafePointer<CChar>?]) -> Result?) -> Result? {
        storage.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            let values: [UnsafePointer<CChar>?] = offsets.map { offset in
                offset.map { UnsafeRawPointer(base + $0).assumingMemoryBound(to: CChar.self) }
            }
            return body(values)
        }
    }
}
