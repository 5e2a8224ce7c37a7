/// Which PostgreSQL server a connection reached, and whether it is the primary: behind a proxy
/// that follows the primary (deploy/ha/), this changes with a failover. Shown by `/healthz`,
/// `nimbus stats` and the console's overview.
package struct DatabaseServer: Sendable, Hashable, CustomStringConvertible {
    /// `inet_server_addr()`; nil over a Unix socket.
    package var address: String?
    /// `inet_server_port()`; nil over a Unix socket.
    package var port: Int?
    /// `NOT pg_is_in_recovery()`: a standby (or a primary in the middle of being demoted) is false.
    package var isPrimary: Bool

    package init(address: String?, port: Int?, isPrimary: Bool) {
        self.address = address
        self.port = port
        self.isPrimary = isPrimary
    }

    /// `127.0.0.1:5433`, or `local socket`.
    package var host: String {
        guard let address else { return "local socket" }
        let shown = address.contains(":") ? "[\(address)]" : address
        return port.map { "\(shown):\($0)" } ?? shown
    }

    /// `primary` or `standby`.
    package var role: String { isPrimary ? "primary" : "standby" }

    package var description: String { "\(host) (\(role))" }

    /// The statement that answers it, one round trip.
    static let query: SQL = "SELECT host(inet_server_addr()), inet_server_port(), pg_is_in_recovery()"

    /// The server a standby's refusal names: an error for a write path that must reach the primary.
    package static func standbyError(_ server: DatabaseServer) -> PGError {
        PGError(.server, "the database server \(server.host) is a standby (in recovery), not the primary; waiting for a failover to finish",
                sqlState: PGError.SQLState.readOnlyTransaction)
    }
}

extension PGConnection {
    /// The server this connection reached (`DatabaseServer`).
    package func server() throws -> DatabaseServer {
        guard let server = try queryFirst(DatabaseServer.query, decode: { row in
            DatabaseServer(address: try row.optionalString(0), port: row.isNull(1) ? nil : try row.int(1), isPrimary: !(try row.bool(2)))
        }) else {
            throw PGError(.connectionLost, "the database answered no row to \(DatabaseServer.query.text)")
        }
        return server
    }

    /// Throws a transient read-only error unless this connection reached the primary: for the
    /// work that must run there only (migrations, the pruning job).
    package func requirePrimary() throws {
        let server = try server()
        guard server.isPrimary else { throw DatabaseServer.standbyError(server) }
    }
}
