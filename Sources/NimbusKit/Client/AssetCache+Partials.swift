import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A download writes its bytes to `.partial-<pid>-<uuid>` in the cache and moves the file into
// place at the end (or removes it). A process killed mid-way leaves its partial file behind; the
// cache removes such leftovers lazily, once per `AssetCache` before its first download, by a rule
// that never touches the partial file of a live download in this or another process:
// - a `.partial-<pid>-…` of another process that no longer runs (`kill(pid, 0)` says ESRCH) is
//   stale at once: no process can be writing it (the pid is in the name, so a live writer's
//   partial always names a running process);
// - a `.partial-<pid>-…` of this process's pid written before this process made its first
//   `AssetCache` is an earlier process's that had the same pid (in a container every run may be
//   pid 1): stale at once;
// - any other partial file (a running process's, or an older `.partial-<uuid>` without a pid) is
//   stale only when not written for `stalePartialAge` (a day): a pid reused by an unrelated
//   process after a reboot keeps a leftover that long at most. A live download writes as its
//   bytes arrive, and the request times out long before a day without bytes.

extension AssetCache {
    /// The prefix of a download's partial file.
    static let partialPrefix = ".partial-"
    /// How long a partial file that may belong to a running process must lie untouched to be stale.
    static let stalePartialAge: TimeInterval = 24 * 3600

    /// When this process made its first asset cache (`AssetCache.init` reads it): every partial
    /// file this process writes is newer.
    static let processFirstUse = Date()

    /// A new partial file's URL in the cache, named with this process's pid. The first call on
    /// this cache removes the stale partial files of killed processes first.
    func newPartialFile() -> URL {
        if sweep.withLock({ done in defer { done = true }; return !done }) { removeStalePartials() }
        return directory.appendingPathComponent("\(Self.partialPrefix)\(getpid())-\(UUID().uuidString)")
    }

    /// Removes the stale partial files (the rule above); returns their names.
    @discardableResult
    func removeStalePartials(now: Date = Date()) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var removed: [String] = []
        for name in names where name.hasPrefix(Self.partialPrefix) {
            let file = directory.appendingPathComponent(name)
            guard Self.isStale(name, modified: Self.modified(file), now: now) else { continue }
            if (try? FileManager.default.removeItem(at: file)) != nil { removed.append(name) }
        }
        return removed
    }

    static func isStale(_ name: String, modified: Date?, now: Date) -> Bool {
        if let modified, now.timeIntervalSince(modified) > stalePartialAge { return true }
        guard let pid = writerPID(name) else { return false }
        // Two seconds of slack for coarse file times: such a leftover waits for the next process.
        if pid == getpid() { return modified.map { $0 < processFirstUse.addingTimeInterval(-2) } ?? false }
        return !isRunning(pid)
    }

    /// The pid in a partial file's name (`.partial-<pid>-<uuid>`); nil for an older name without one.
    static func writerPID(_ name: String) -> pid_t? {
        let rest = name.dropFirst(partialPrefix.count)
        guard let dash = rest.firstIndex(of: "-"), let pid = pid_t(rest[..<dash]), pid > 0 else { return nil }
        return pid
    }

    /// True while a process of that pid exists (EPERM: it exists but is another user's).
    static func isRunning(_ pid: pid_t) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    private static func modified(_ file: URL) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: file.path))?[.modificationDate] as? Date
    }
}
