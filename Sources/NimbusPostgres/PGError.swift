/// An error from PostgreSQL or from talking to it. Keeps the SQLSTATE so that NimbusStore can map
/// constraint violations and serialization failures to domain errors.
package struct PGError: Error, Sendable, CustomStringConvertible {
    package struct Kind: Sendable, Hashable, CustomStringConvertible {
        package let name: String
        package var description: String { name }

        /// A connection could not be opened (server down, wrong URL, authentication).
        package static let connectionFailed = Kind(name: "connectionFailed")
        /// An open connection broke during use (server restarted or killed the backend).
        package static let connectionLost = Kind(name: "connectionLost")
        /// The server answered a statement with an error; `sqlState` says which.
        package static let server = Kind(name: "server")
        /// A column could not be decoded into the requested Swift type.
        package static let decoding = Kind(name: "decoding")
        /// No pooled connection became free in time.
        package static let poolTimeout = Kind(name: "poolTimeout")
        /// The pool was closed (shutdown).
        package static let poolClosed = Kind(name: "poolClosed")
        /// A migration file was edited after it was applied, or the directory is unusable.
        package static let migration = Kind(name: "migration")
        /// The embedded cluster could not be prepared or started.
        package static let cluster = Kind(name: "cluster")
        /// Another server holds the data directory (its cluster is running).
        package static let clusterInUse = Kind(name: "clusterInUse")
        /// A PostgreSQL client program (pg_dump, pg_restore, psql) is missing or failed.
        package static let tool = Kind(name: "tool")
        /// The data directory or URL holds no Nimbus database, and the command does not create one.
        package static let noDatabase = Kind(name: "noDatabase")
        /// A backup archive is unusable: truncated, not a Nimbus backup, or from a newer schema.
        package static let archive = Kind(name: "archive")
    }

    package var kind: Kind
    package var message: String
    package var sqlState: String?
    package var detail: String?

    package init(_ kind: Kind, _ message: String, sqlState: String? = nil, detail: String? = nil) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
    }

    /// True when retrying later may succeed: the database is unreachable, restarting, saturated,
    /// or a standby (a failover in progress). The API answers these with 503 TRY_AGAIN_LATER and
    /// `Retry-After`.
    package var isTransient: Bool {
        switch kind {
        case .connectionFailed, .connectionLost, .poolTimeout, .poolClosed: return true
        case .server:
            // Class 08: connection exception; 57P0x: admin/crash shutdown, cannot connect now;
            // 53300: too many connections.
            guard let state = sqlState else { return false }
            return state.hasPrefix("08") || state.hasPrefix("57P") || state == "53300" || isReadOnly
        default: return false
        }
    }

    /// The server is a standby, or a primary being demoted: it refused a write (25006
    /// read_only_sql_transaction, "cannot execute … in a read-only transaction" or "… during
    /// recovery"). Behind a proxy that follows the primary (deploy/ha/haproxy.cfg) this is a
    /// connection made in the moment before the proxy noticed a switchover.
    package var isReadOnly: Bool {
        guard kind == .server else { return false }
        return sqlState == SQLState.readOnlyTransaction || message.contains("in a read-only transaction")
            || message.contains("during recovery")
    }

    /// The server behind this connection is gone or no longer the primary: the connection, and
    /// every idle one beside it, are not worth keeping (57P01 admin shutdown, 57P02 crash
    /// shutdown, 57P03 cannot connect now, a read-only standby, or a lost connection).
    package var meansServerGone: Bool {
        if kind == .connectionLost { return true }
        guard kind == .server, let state = sqlState else { return false }
        return state == "57P01" || state == "57P02" || state == "57P03" || isReadOnly
    }

    /// A failover or restart in progress, as seen by a new connection or the work that must run on
    /// the primary: a standby, a server shutting down or starting up, or (through a proxy that
    /// follows the primary, deploy/ha/haproxy.cfg) no server behind the proxy. Migrations wait
    /// these out; a wrong address or password is not one of them.
    package var isFailoverInProgress: Bool {
        if meansServerGone && kind == .server { return true }
        guard kind == .connectionFailed || kind == .connectionLost else { return false }
        return ["the database system is starting up", "the database system is shutting down", "the database system is in recovery mode",
                "the database system is not yet accepting connections", "server closed the connection unexpectedly"]
            .contains { message.contains($0) }
    }

    package var description: String {
        var text = "\(kind): \(message)"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        if let detail { text += " — \(detail)" }
        return text
    }

    /// SQLSTATE values NimbusStore maps to domain errors.
    package enum SQLState {
        package static let uniqueViolation = "23505"
        package static let foreignKeyViolation = "23503"
        package static let serializationFailure = "40001"
        package static let deadlockDetected = "40P01"
        package static let queryCanceled = "57014"
        package static let readOnlyTransaction = "25006"
    }
}
