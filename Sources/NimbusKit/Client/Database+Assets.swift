import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Database {
    /// The asset's bytes as a local file: from the cache when these bytes were downloaded before,
    /// else downloaded, verified against `fileChecksum` (a mismatch is `assetCorrupted`, and no
    /// file) and cached.
    ///
    /// An encrypted asset (`Asset.isEncrypted`) is downloaded sealed, verified, opened into the
    /// cache and the sealed bytes deleted: the file returned is the plaintext, and bytes that are
    /// not its sealed file (changed, moved, or a plaintext file in their place) are
    /// `decryptionFailed`, with no file.
    public func downloadAsset(_ asset: Asset) async throws -> URL {
        guard let checksum = asset.fileChecksum else {
            if let file = asset.fileURL { return file }
            throw NimbusError(.invalidArguments, reason: "The asset has neither a checksum nor a file.")
        }
        let cache = container.assetCache
        let sealed = asset.sealContext.map { (context: $0, opened: openedFile(asset, $0)) }
        if let sealed {
            if FileManager.default.fileExists(atPath: sealed.opened.path) { return sealed.opened }
        } else if let file = cache.cached(checksum) {
            return file
        }
        guard let downloadURL = asset.downloadURL else {
            if let file = asset.fileURL { return file }
            throw NimbusError(.invalidArguments, reason: "The asset has no downloadURL: fetch its record from the server first.")
        }
        let temporary: URL
        let response: URLResponse
        do {
            let limits = asset.size == nil ? (try? await container.limits()) ?? .defaults : .defaults
            (temporary, response) = try await CancellableRequest.download(transport.session, for: transport.request(downloadURL, method: "GET"),
                                                                          limit: .asset(size: asset.size, limits))
        } catch {
            throw Transport.networkError(error, url: downloadURL, timeout: container.configuration.requestTimeout)
        }
        guard let sealed else { return try admit(temporary, response: response, checksum: checksum, size: asset.size) }
        let verified = try admit(temporary, response: response, checksum: checksum, size: asset.size, as: sealedDownloadFile())
        return try openDownloaded(verified, asset, sealed.context)
    }

    /// The same as `downloadAsset`, blocking the calling thread (for CloudKit's synchronous
    /// `CKAsset.fileURL`). It waits on URLSession's own queue, never on the task pool.
    public func downloadAssetBlocking(_ asset: Asset) throws -> URL {
        guard let checksum = asset.fileChecksum, let downloadURL = asset.downloadURL else {
            if let file = asset.fileURL { return file }
            throw NimbusError(.invalidArguments, reason: "The asset has no downloadURL: fetch its record from the server first.")
        }
        if let context = asset.sealContext {
            let opened = openedFile(asset, context)
            if FileManager.default.fileExists(atPath: opened.path) { return opened }
        } else if let file = container.assetCache.cached(checksum) {
            return file
        }
        let target = asset.sealContext.map { _ in sealedDownloadFile() }
        let outcome = Locked<Result<URL, NimbusError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        // Without a size, the default maxAssetBytes bounds it (a fetched asset always has one).
        transport.startDownload(transport.request(downloadURL, method: "GET"), limit: .asset(size: asset.size, .defaults)) { downloaded in
            let result: Result<URL, NimbusError>
            switch downloaded {
            case .success(let (file, response)):
                result = Result {
                    let verified = try self.admit(file, response: response, checksum: checksum, size: asset.size, as: target)
                    return try asset.sealContext.map { try self.openDownloaded(verified, asset, $0) } ?? verified
                }
                    .mapError { $0 as? NimbusError ?? NimbusError(.networkFailure, reason: "\($0)") }
            case .failure(let error):
                result = .failure(Transport.networkError(error, url: downloadURL, timeout: self.container.configuration.requestTimeout))
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        guard let result = outcome.withLock({ $0 }) else { throw NimbusError(.networkFailure, reason: "The download ended without a result") }
        return try result.get()
    }

    private func admit(_ temporary: URL, response: URLResponse, checksum: String, size: Int64?, as target: URL? = nil) throws -> URL {
        guard let http = response as? HTTPURLResponse else { throw JSON.bad("The download's answer is not HTTP") }
        if !(200..<300).contains(http.statusCode) {
            let body = (try? Data(contentsOf: temporary)) ?? Data()
            try? FileManager.default.removeItem(at: temporary)
            try Transport.check(http, data: body, zoneID: .default)
        }
        return try container.assetCache.admit(downloaded: temporary, checksum: checksum, expectedSize: size, as: target)
    }
}
