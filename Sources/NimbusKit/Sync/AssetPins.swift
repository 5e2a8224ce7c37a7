import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The files of pending changes' assets, kept until the server has them. At enqueue, each asset
/// file not yet uploaded is hard-linked (copied where a link is impossible) into a folder beside
/// the state file, and the change refers to that link: the app may delete or overwrite its file
/// (a cache clean-up) and the change still sends the bytes it was enqueued with. A link costs no
/// bytes. Links no pending or parked change refers to any more are removed after sends and on
/// open. Saves of the pull model are not pinned: their records, and files, are the app's until
/// it hands them over at send time.
struct AssetPins {
    /// `<state file>.assets`.
    let folder: URL
    /// Files in the folder as far as this process knows (no clean-up runs while it is zero).
    private(set) var count = 0

    init(stateURL: URL) {
        folder = stateURL.appendingPathExtension("assets")
        count = (try? FileManager.default.contentsOfDirectory(atPath: folder.path).count) ?? 0
    }

    /// The change with its unsent asset files linked into the folder, and whether any was (the
    /// caller then makes the links durable with `sync()` before the journal refers to them). A
    /// missing file is left as it is: sending parks that change with `assetFileNotFound`.
    mutating func pin(_ change: PendingChange) -> (PendingChange, Bool) {
        guard case .save(var record) = change else { return (change, false) }
        var pinned = false
        for (key, value) in record.fields {
            guard let linked = pinning(value) else { continue }
            record.fields[key] = linked
            pinned = true
        }
        return (.save(record), pinned)
    }

    /// The value with its unsent asset files linked, or nil when none was: a plain asset, each
    /// asset of a list, and the asset of an encrypted value (`encryptedValues[f] = .asset(…)`,
    /// sealed only at upload, so its file must last as long as a plain one's).
    private mutating func pinning(_ value: RecordValue) -> RecordValue? {
        switch value {
        case .asset(var asset):
            guard asset.receipt == nil, let file = asset.fileURL, !isPinned(file),
                  FileManager.default.fileExists(atPath: file.path), let link = link(file) else { return nil }
            asset.fileURL = link
            return .asset(asset)
        case .list(var values, let type):
            var changed = false
            for index in values.indices {
                guard let linked = pinning(values[index]) else { continue }
                values[index] = linked
                changed = true
            }
            return changed ? .list(values, elementType: type) : nil
        case .encrypted(var encrypted):
            guard let plaintext = encrypted.plaintext, let linked = pinning(plaintext) else { return nil }
            encrypted.plaintext = linked
            return .encrypted(encrypted)
        default:
            return nil
        }
    }

    /// Makes new links durable: the folder's entries reach the disk.
    func sync() {
        let fd = open(folder.path, O_RDONLY)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// Removes the links no change of `state` refers to (a cost proportional to the outbox: run
    /// after changes left it, and only while links exist).
    mutating func release(keeping state: SyncState) {
        guard count > 0 else { return }
        var referenced: Set<String> = []
        for change in state.outbox.map(\.change) + state.failed.map(\.change) {
            guard case .save(let record) = change else { continue }
            for value in record.fields.values {
                AssetPins.forEachAsset(in: value) { asset in
                    if let file = asset.fileURL, isPinned(file) { referenced.insert(file.lastPathComponent) }
                }
            }
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where !referenced.contains(name) {
            unlink(folder.appendingPathComponent(name).path)
        }
        count = referenced.count
    }

    /// Every asset of a value: itself, a list's, an encrypted value's plaintext's.
    static func forEachAsset(in value: RecordValue, _ body: (Asset) -> Void) {
        switch value {
        case .asset(let asset): body(asset)
        case .list(let values, _): for element in values { forEachAsset(in: element, body) }
        case .encrypted(let encrypted): if let plaintext = encrypted.plaintext { forEachAsset(in: plaintext, body) }
        default: break
        }
    }

    private func isPinned(_ file: URL) -> Bool {
        file.deletingLastPathComponent().standardizedFileURL.path == folder.standardizedFileURL.path
    }

    private mutating func link(_ file: URL) -> URL? {
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let target = folder.appendingPathComponent("\(UUID().uuidString)-\(file.lastPathComponent)")
        if posixLink(file.path, target.path) != 0 {
            // Another file system (EXDEV) or no links allowed: a copy (a clone on APFS).
            guard (try? FileManager.default.copyItem(at: file, to: target)) != nil else { return nil }
        }
        count += 1
        return target
    }
}

/// `link(2)`, named apart from `AssetPins.link`.
@inline(__always)
private func posixLink(_ from: String, _ to: String) -> Int32 { link(from, to) }
