import Foundation
import Glibc
import NimbusSupport

/// A private PostgreSQL cluster inside Nimbus's data directory: `initdb` on first start, `postgres`
/// listening only on a Unix socket in the directory, stopped with the server.
///
/// Started as root it runs the database as an unprivileged user (PostgreSQL refuses root). A lock
/// file held for the process's life keeps a second `nimbus serve` off the same directory; a
/// cluster left running by a killed server is stopped and restarted, and PostgreSQL's own crash
/// recovery handles the rest.
package final class EmbeddedCluster: @unchecked Sendable {
    // @unchecked: mutable state (`started`) is touched only by the start-up and shutdown paths,
    // which run one after the other on the main task.

    package struct Binaries: Sendable {
        package var initdb: String
        package var pgCtl: String

        /// initdb and pg_ctl from PATH, else from the newest `/usr/lib/postgresql/*/bin`.
        package static func locate() throws -> Binaries {
            let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
            let fallbacks = versions.compactMap(Int.init).sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin" }
            guard let initdb = Subprocess.find("initdb", fallbackDirectories: fallbacks),
                  let pgCtl = Subprocess.find("pg_ctl", fallbackDirectories: fallbacks) else {
                throw PGError(.cluster, """
                    PostgreSQL's server programs (initdb, pg_ctl) were not found on PATH or under \
                    /usr/lib/postgresql/*/bin; install them with `apt-get install postgresql` or pass --database-url
                    """)
            }
            return Binaries(initdb: initdb, pgCtl: pgCtl)
        }
    }

    /// Where the cluster lives.
    package let dataDirectory: URL
    package let clusterDirectory: URL
    package let socketDirectory: URL
    package let databaseName = "nimbus"
    package let superuser = "nimbus"

    private let binaries: Binaries
    private let runAsUser: String?
    private let lockDescriptor: Int32
    private let logger = Logger(subsystem: "embedded-postgres")
    private var started = false

    /// The connection URL of the cluster's `nimbus` database (Unix socket, no TCP).
    package var url: String {
        "postgresql:///\(databaseName)?host=\(socketDirectory.path)&user=\(superuser)"
    }

    /// The URL of the cluster a running server keeps in `dataDirectory` (admin commands use it
    /// beside the server); nil when the directory has no socket.
    package static func runningServerURL(dataDirectory: URL) -> String? {
        let socket = clusterBase(dataDirectory).appendingPathComponent("run")
        guard FileManager.default.fileExists(atPath: socket.appendingPathComponent(".s.PGSQL.5432").path) else { return nil }
        return "postgresql:///nimbus?host=\(socket.path)&user=nimbus"
    }

    /// Where the cluster of a data directory lives: the directory itself, or where its
    /// `postgres-location` says (see `layout`).
    private static func clusterBase(_ dataDirectory: URL) -> URL {
        let data = dataDirectory.standardizedFileURL
        guard let moved = try? String(contentsOf: data.appendingPathComponent("postgres-location"), encoding: .utf8) else { return data }
        return URL(fileURLWithPath: moved.trimmed)
    }

    /// Whether `dataDirectory` holds a cluster (in it, or where its `postgres-location` says).
    package static func hasCluster(dataDirectory: URL) -> Bool {
        FileManager.default.fileExists(atPath: clusterBase(dataDirectory).appendingPathComponent("postgres/PG_VERSION").path)
    }

    /// Set when the database user cannot reach the data directory and the cluster lives
    /// elsewhere: one line saying where, and how to reach it.
    package private(set) var relocation: String?

    /// The socket URL the cluster of `dataDirectory` listens on while it runs.
    package static func socketURL(dataDirectory: URL) -> String {
        "postgresql:///nimbus?host=\(clusterBase(dataDirectory).appendingPathComponent("run").path)&user=nimbus"
    }

    /// Prepares the directory and takes its lock; throws if another server holds it.
    package init(dataDirectory: URL) throws {
        let data = dataDirectory.standardizedFileURL
        let user = geteuid() == 0 ? try Self.unprivilegedUser() : nil
        try Self.createDataDirectory(data, reachableBy: user)
        self.dataDirectory = data
        lockDescriptor = try Self.lock(data)
        do {
            binaries = try Binaries.locate()
            runAsUser = user
            (clusterDirectory, socketDirectory) = try Self.layout(data, runAsUser: runAsUser)
            if clusterDirectory.deletingLastPathComponent().standardizedFileURL.path != data.path {
                relocation = """
                    the database user \(user ?? "") cannot reach \(data.path) (a parent directory is private), so its \
                    PostgreSQL cluster lives in \(clusterDirectory.deletingLastPathComponent().path); `nimbus db-url --data-dir \(data.path)` \
                    prints its URL, and deleting \(data.path) does not delete it
                    """
            }
        } catch {
            close(lockDescriptor)
            throw error
        }
    }

    deinit {
        close(lockDescriptor)
    }

    /// Initializes the cluster if needed, starts it and creates the `nimbus` database.
    package func start() throws {
        if let relocation { logger.warning(relocation) }
        try prepareDirectories()
        if !FileManager.default.fileExists(atPath: clusterDirectory.appendingPathComponent("PG_VERSION").path) {
            try initialize()
        }
        try stopLeftoverServer()
        let options = [
            "-c listen_addresses=''",
            "-c unix_socket_directories='\(socketDirectory.path)'",
            "-c unix_socket_permissions=0700",
            "-c max_connections=200",
            "-c fsync=on",
        ].joined(separator: " ")
        let logFile = socketDirectory.appendingPathComponent("postgres.log").path
        let outcome = try runPostgresProgram(binaries.pgCtl, ["start", "-w", "-t", "60", "-D", clusterDirectory.path,
                                                              "-l", logFile, "-o", options])
        guard outcome.succeeded else {
            let tail = (try? String(contentsOfFile: logFile, encoding: .utf8))?.split(separator: "\n").suffix(8).joined(separator: "\n") ?? ""
            throw PGError(.cluster, "PostgreSQL did not start: \(outcome.output.trimmed)\n\(tail)")
        }
        started = true
        logger.info("embedded PostgreSQL started", ["data": clusterDirectory.path, "socket": socketDirectory.path])
        try createDatabaseIfMissing()
    }

    /// Stops the cluster (fast shutdown: running transactions roll back, data is safe).
    package func stop() {
        guard started else { return }
        started = false
        do {
            let outcome = try runPostgresProgram(binaries.pgCtl, ["stop", "-w", "-t", "30", "-m", "fast", "-D", clusterDirectory.path])
            if outcome.succeeded {
                logger.info("embedded PostgreSQL stopped")
            } else {
                logger.error("embedded PostgreSQL did not stop cleanly", ["output": outcome.output.trimmed])
            }
        } catch {
            logger.error("could not run pg_ctl stop", ["error": "\(error)"])
        }
    }

    /// Stops the cluster and deletes its files and socket directory: for a command that created
    /// the cluster and then failed (a refused restore leaves no empty cluster behind).
    package func discard() {
        stop()
        for directory in [clusterDirectory, socketDirectory] {
            do {
                try FileManager.default.removeItem(at: directory)
            } catch {
                logger.error("could not delete \(directory.path)", ["error": "\(error)"])
            }
        }
    }

    // MARK: - Steps

    private func initialize() throws {
        logger.info("initializing a new PostgreSQL cluster", ["data": clusterDirectory.path])
        let outcome = try runPostgresProgram(binaries.initdb, [
            "-D", clusterDirectory.path, "-U", superuser, "--auth=trust", "--encoding=UTF8",
            "--locale=C", "--no-instructions",
        ])
        guard outcome.succeeded else {
            throw PGError(.cluster, "initdb failed: \(outcome.output.trimmed)")
        }
    }

    /// A server left running by a killed `nimbus` (we hold the lock, so no live server owns it).
    private func stopLeftoverServer() throws {
        let status = try runPostgresProgram(binaries.pgCtl, ["status", "-D", clusterDirectory.path])
        guard status.status == 0 else { return }  // 3: not running
        logger.warning("a PostgreSQL server from an earlier run is still running; stopping it first")
        _ = try runPostgresProgram(binaries.pgCtl, ["stop", "-w", "-t", "60", "-m", "fast", "-D", clusterDirectory.path])
    }

    private func createDatabaseIfMissing() throws {
        let admin = "postgresql:///postgres?host=\(socketDirectory.path)&user=\(superuser)"
        let connection = try PGConnection.connect(url: admin, connectTimeoutSeconds: 10)
        let exists = try connection.queryFirst("SELECT 1 FROM pg_database WHERE datname = \(databaseName)") { _ in true } ?? false
        if !exists {
            try connection.run("CREATE DATABASE \(identifier: databaseName)")
        }
    }

    private func prepareDirectories() throws {
        for directory in [clusterDirectory, socketDirectory] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            if let user = runAsUser {
                try Self.chown(directory, to: user)
            }
        }
    }

    private func runPostgresProgram(_ program: String, _ arguments: [String]) throws -> Subprocess.Outcome {
        if let user = runAsUser {
            // runuser keeps us out of PAM prompts; -u needs no login shell for the system user.
            return try Subprocess.run("/usr/sbin/runuser", ["-u", user, "--", program] + arguments)
        }
        return try Subprocess.run(program, arguments)
    }

    // MARK: - Layout, lock and user

    /// The cluster in `<data>/postgres`, the socket in `<data>/run`. When started as root and the
    /// unprivileged user cannot reach the data directory (a checkout under /root), both move to
    /// `/var/lib/nimbus/clusters/<hash of the data path>` and `<data>/postgres-location` records
    /// where. A cluster found there without that record belonged to a data directory that was
    /// deleted: it is moved aside, never taken over by the new directory.
    private static func layout(_ data: URL, runAsUser user: String?) throws -> (cluster: URL, socket: URL) {
        var base = data
        if let user, !(try userCanTraverse(user, data)) {
            let key = Hex.encode(SHA256.hash(data.path)).prefix(16)
            base = URL(fileURLWithPath: "/var/lib/nimbus/clusters/\(key)")
            let pointer = data.appendingPathComponent("postgres-location")
            if !FileManager.default.fileExists(atPath: pointer.path), FileManager.default.fileExists(atPath: base.path) {
                let aside = base.path + "-orphaned-\(Int(Date().timeIntervalSince1970))"
                try FileManager.default.moveItem(atPath: base.path, toPath: aside)
                Logger(subsystem: "embedded-postgres").warning(
                    "a cluster of an earlier data directory at \(data.path) was left in \(base.path); moved it to \(aside)")
            }
            try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
            try chown(base, to: user)
            try? base.path.write(to: pointer, atomically: true, encoding: .utf8)
        }
        let socket = base.appendingPathComponent("run")
        // sockaddr_un.sun_path holds 107 bytes; ".s.PGSQL.5432" needs 14 of them.
        guard socket.path.utf8.count + 14 < 107 else {
            throw PGError(.cluster, "the data directory path is too long for a Unix socket; choose a shorter --data-dir")
        }
        return (base.appendingPathComponent("postgres"), socket)
    }

    /// Creates the data directory and any missing parents so that the database user can reach
    /// it: new directories get mode 0755 whatever the umask, and the data directory itself
    /// belongs to that user when started as root. Existing directories are left as they are.
    private static func createDataDirectory(_ data: URL, reachableBy user: String?) throws {
        var missing: [URL] = []
        var cursor = data
        while !FileManager.default.fileExists(atPath: cursor.path), cursor.path != "/" {
            missing.append(cursor)
            cursor = cursor.deletingLastPathComponent()
        }
        for directory in missing.reversed() {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o755])
            _ = Glibc.chmod(directory.path, 0o755)
        }
        if let user, missing.first == data {
            try chown(data, to: user)
        }
    }

    private static func userCanTraverse(_ user: String, _ directory: URL) throws -> Bool {
        try Subprocess.run("/usr/sbin/runuser", ["-u", user, "--", "test", "-x", directory.path]).succeeded
    }

    /// An unprivileged account for the database: `postgres` if the packages made one, else a
    /// system user `nimbus` created now.
    private static func unprivilegedUser() throws -> String {
        for name in ["postgres", "nimbus"] where getpwnam(name) != nil {
            return name
        }
        let outcome = try Subprocess.run("/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "nimbus"])
        guard outcome.succeeded else {
            throw PGError(.cluster, "cannot create the system user nimbus to run PostgreSQL (PostgreSQL refuses root): \(outcome.output.trimmed)")
        }
        return "nimbus"
    }

    private static func chown(_ url: URL, to user: String) throws {
        guard let entry = getpwnam(user) else { throw PGError(.cluster, "no user \(user)") }
        guard Glibc.chown(url.path, entry.pointee.pw_uid, entry.pointee.pw_gid) == 0 else {
            throw PGError(.cluster, "cannot hand \(url.path) to \(user): \(String(cString: strerror(errno)))")
        }
    }

    /// Takes `<data>/nimbus.lock` exclusively; the kernel releases it when the process dies.
    private static func lock(_ data: URL) throws -> Int32 {
        let path = data.appendingPathComponent("nimbus.lock").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw PGError(.cluster, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = read(descriptor, &buffer, 32)
            let owner = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self).trimmed : "unknown"
            close(descriptor)
            throw PGError(.clusterInUse, "another nimbus server (pid \(owner)) is using the data directory \(data.path); stop it or choose another --data-dir")
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(descriptor, 0)
        _ = pid.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        return descriptor
    }
}

extension String {
    var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
