import Foundation
import Glibc
import NimbusSupport

/// The relay's state: `installations.json` in its data directory (0700), the file 0600. Written only
/// by the `nimbus relay installation` commands, one at a time (an exclusive `flock` on
/// `installations.lock`), each write a new file fsynced and renamed over the old one (then the
/// directory fsynced), so a reader — the running relay — sees the old or the new list, never half.
package struct InstallationFile: Sendable {
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        package var description: String
        package init(description: String) { self.description = description }
    }

    package let directory: String
    package var path: String { directory + "/installations.json" }
    private var lockPath: String { directory + "/installations.lock" }

    package init(directory: String) {
        self.directory = directory
    }

    /// The installations, empty when the file does not exist yet. Refuses a file others may read
    /// (it holds signing keys) and one that does not parse.
    package func read() throws(Failure) -> [Installation] {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return [] }
            throw Failure(description: "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw Failure(description: "\(path) holds signing keys and may be read by others (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw Failure(description: "cannot read \(path)") }
        guard let object = (try? JSONValue.parse(Array(data)))?.objectValue, object["version"]?.int64Value == 1,
              let list = object["installations"]?.arrayValue else {
            throw Failure(description: "\(path) is not a relay installation list (version 1)")
        }
        var installations: [Installation] = []
        for entry in list {
            guard let installation = Installation(json: entry) else { throw Failure(description: "\(path) has an entry that does not parse") }
            installations.append(installation)
        }
        return installations
    }

    /// Reads, changes and writes the list under the lock; `change`'s error leaves the file as it was.
    package func update<T>(_ change: (inout [Installation]) throws(Failure) -> T) throws(Failure) -> T {
        try makeDirectory()
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw Failure(description: "cannot open \(lockPath): \(String(cString: strerror(errno)))") }
        defer { close(lock) }
        guard flock(lock, LOCK_EX) == 0 else { throw Failure(description: "cannot lock \(lockPath): \(String(cString: strerror(errno)))") }
        var installations = try read()
        let result = try change(&installations)
        try store(installations)
        return result
    }

    private func makeDirectory() throws(Failure) {
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw Failure(description: "cannot create the relay data directory \(directory): \(String(cString: strerror(errno)))")
        }
    }

    private func store(_ installations: [Installation]) throws(Failure) {
        let object: JSONObject = ["version": 1, "installations": .array(installations.map(\.json))]
        var bytes = JSONValue.object(object).serialized()
        bytes.append(UInt8(ascii: "\n"))
        let temporary = path + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(description: "cannot create \(temporary): \(String(cString: strerror(errno)))") }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                guard let base = buffer.baseAddress else { return 0 }
                return Glibc.write(fd, base + written, buffer.count - written)
            }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                close(fd)
                throw Failure(description: "cannot write \(temporary): \(String(cString: strerror(errno)))")
            }
            written += count
        }
        guard fsync(fd) == 0 else {
            close(fd)
            throw Failure(description: "cannot sync \(temporary): \(String(cString: strerror(errno)))")
        }
        close(fd)
        guard rename(temporary, path) == 0 else { throw Failure(description: "cannot replace \(path): \(String(cString: strerror(errno)))") }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }

    /// What identifies the file's current version (a rename makes a new inode), to notice changes.
    package func version() -> FileVersion? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileVersion(inode: UInt64(info.st_ino), size: Int64(info.st_size), modifiedNanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    package struct FileVersion: Sendable, Equatable {
        var inode: UInt64
        var size: Int64
        var modifiedNanoseconds: Int64
    }
}
