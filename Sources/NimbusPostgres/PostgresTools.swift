import Foundation
import NimbusSupport

/// PostgreSQL's client programs (`pg_dump`, `pg_restore`, `psql`), newest installed version first:
/// a dump must be taken by a `pg_dump` at least as new as the server.
package enum PostgresTools {
    /// The path of `name`: `/usr/lib/postgresql/<newest>/bin`, else PATH.
    package static func locate(_ name: String) throws -> String {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.compactMap(Int.init).sorted(by: >) {
            let candidate = "/usr/lib/postgresql/\(version)/bin/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        guard let found = Subprocess.find(name) else {
            throw PGError(.tool, "PostgreSQL's \(name) was not found under /usr/lib/postgresql/*/bin or on PATH; install it with `apt-get install postgresql-client`")
        }
        return found
    }

    /// Runs one of the programs; a failure throws with its output's last lines.
    @discardableResult
    package static func run(_ name: String, _ arguments: [String], failure: String) throws -> String {
        let outcome = try Subprocess.run(try locate(name), arguments)
        guard outcome.succeeded else {
            let tail = outcome.output.split(separator: "\n").suffix(6).joined(separator: "\n")
            throw PGError(.tool, failure.isEmpty ? tail : "\(failure): \(tail)")
        }
        return outcome.output
    }
}
