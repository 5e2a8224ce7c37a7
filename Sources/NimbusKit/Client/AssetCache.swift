import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Downloaded assets on disk, one file per `fileChecksum` (a sealed asset's opened plaintext: one
/// per checksum and place): a second access of the same bytes is served from here. A file enters
/// the cache only after its bytes matched the checksum (`AssetDownload` writes it beside the
/// others as `.partial-<pid>-…` and moves it into place then). Partial files a killed process
/// left are removed before the cache's first download (`AssetCache+Partials.swift`).
final class AssetCache: Sendable {
    let directory: URL
    /// Whether the stale partial files were removed yet (once per cache, before its first download).
    let sweep = Locked<Bool>(false)

    init(directory: URL) {
        self.directory = directory
        _ = AssetCache.processFirstUse
    }

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
}
