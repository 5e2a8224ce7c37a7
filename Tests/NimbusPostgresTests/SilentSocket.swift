import Foundation
import Glibc

/// A Unix socket named as PostgreSQL names its socket (`.s.PGSQL.5432`) that takes connections
/// into its backlog but never reads or answers them.
final class SilentSocket: Sendable {
    let directory: String
    let descriptor: Int32

    init() throws {
        directory = "/tmp/nimbus-silent-\(UUID().uuidString.prefix(8))"
        guard mkdir(directory, 0o700) == 0 else { throw TestSetupError("mkdir \(directory) failed") }
        let path = directory + "/.s.PGSQL.5432"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSetupError("socket() failed") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8CString)
        guard pathBytes.count <= MemoryLayout.size(ofValue: address.sun_path) else { throw TestSetupError("socket path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            pathBytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            Glibc.close(fd)
            throw TestSetupError("bind/listen on \(path) failed: \(String(cString: strerror(errno)))")
        }
        descriptor = fd
    }

    func close() {
        Glibc.close(descriptor)
        unlink(directory + "/.s.PGSQL.5432")
        rmdir(directory)
    }
}
