import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Downloaded assets on disk, one file per `fileChecksum`: a second access of the same bytes is
/// served from here. A file enters the cache only after its bytes matched the checksum.
final class AssetCache: Sendable {
    let directory: URL

    init(directory: URL) { self.directory = directory }

    static func defaultDirectory() -> URL {
        let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        return caches.appendingPathComponent("NimbusAssets", isDirectory: true)
    }

    /// The cache file of a checksum (base64url, so that it is a file name).
    func fileURL(for checksum: String) -> URL {
        let name = checksum.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return directory.appendingPathComponent(name)
    }

    /// The cached file of an asset, if it is there.
    func cached(_ checksum: String) -> URL? {
        let url = fileURL(for: checksum)
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }

    /// Verifies a downloaded file against the checksum and moves it into the cache (or to
    /// `target`: a sealed asset's bytes, kept only until opened); a mismatch removes it and throws
    /// `assetCorrupted`.
    func admit(downloaded file: URL, checksum: String, expectedSize: Int64?, as target: URL? = nil) throws -> URL {
        let actual: (checksum: String, size: Int64)
        do {
            actual = try Checksum.ofFile(file)
        } catch {
            try? FileManager.default.removeItem(at: file)
            throw NimbusError(.networkFailure, reason: "The downloaded asset could not be read: \(error.localizedDescription)")
        }
        guard actual.checksum == checksum, expectedSize == nil || expectedSize == actual.size else {
            try? FileManager.default.removeItem(at: file)
            throw NimbusError(.assetCorrupted, reason: "The downloaded asset's bytes (\(actual.size) bytes, SHA-256 \(actual.checksum)) "
                + "do not match its checksum \(checksum); nothing was cached. Download it again.")
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let target = target ?? fileURL(for: checksum)
        if FileManager.default.fileExists(atPath: target.path) {
            try? FileManager.default.removeItem(at: file)
            return target
        }
        do {
            try FileManager.default.moveItem(at: file, to: target)
        } catch where FileManager.default.fileExists(atPath: target.path) {
            try? FileManager.default.removeItem(at: file)  // another download of the same bytes won
        }
        return target
    }
}
