import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Database {
    /// The asset's bytes as a local file: from the cache when these bytes were downloaded before,
    /// else downloaded, verified against `fileChecksum` (a mismatch is `assetCorrupted`, and no
    /// file) and cached. The bytes are hashed as they arrive and written once (`AssetDownload`).
    ///
    /// An encrypted asset (`Asset.isEncrypted`) is opened as it arrives: only its plaintext is
    /// written, into the cache (the sealed bytes never reach the disk), and the file returned is
    /// the plaintext. Bytes that match the checksum but are not its sealed file (changed, moved, or
    /// a plaintext file in their place) are `decryptionFailed`, with no file.
    public func downloadAsset(_ asset: Asset) async throws -> URL {
        guard let checksum = asset.fileChecksum else {
            if let file = asset.fileURL { return file }
            throw NimbusError(.invalidArguments, reason: "The asset has neither a checksum nor a file.")
        }
        if let file = cachedFile(asset, checksum: checksum) { return file }
        guard let downloadURL = asset.downloadURL else {
            if let file = asset.fileURL { return file }
            throw NimbusError(.invalidArguments, reason: "The asset has no downloadURL: fetch its record from the server first.")
        }
        let download = try makeDownload(asset)
        let body: Data
        let response: URLResponse
        do {
            let limits = asset.size == nil ? (try? await container.limits()) ?? .defaults : .defaults
            (body, response) = try await CancellableRequest.download(transport.session, for: transport.request(downloadURL, method: "GET"),
                                                                     limit: .asset(size: asset.size, limits), into: download)
        } catch {
            download.discard()
            throw Transport.networkError(error, url: downloadURL, timeout: container.configuration.requestTimeout)
        }
        return try finish(download, asset, checksum: checksum, body: body, response: response)
    }

    /// The same as `downloadAsset`, blocking the calling thread (for CloudKit's synchronous
    /// `CKAsset.fileURL`). It waits on URLSession's own queue, never on the task pool.
    public func downloadAssetBlocking(_ asset: Asset) throws -> URL {
        guard let checksum = asset.fileChecksum, let downloadURL = asset.downloadURL else {
            if let file = asset.fileURL { return file }
            throw NimbusError(.invalidArguments, reason: "The asset has no downloadURL: fetch its record from the server first.")
        }
        if let file = cachedFile(asset, checksum: checksum) { return file }
        let download = try makeDownload(asset)
        let outcome = Locked<Result<URL, NimbusError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        // Without a size, the default maxAssetBytes bounds it (a fetched asset always has one).
        transport.startDownload(transport.request(downloadURL, method: "GET"), limit: .asset(size: asset.size, .defaults),
                                into: download) { downloaded in
            let result: Result<URL, NimbusError>
            switch downloaded {
            case .success(let (body, response)):
                result = Result { try self.finish(download, asset, checksum: checksum, body: body, response: response) }
                    .mapError { $0 as? NimbusError ?? NimbusError(.networkFailure, reason: "\($0)") }
            case .failure(let error):
                download.discard()
                result = .failure(Transport.networkError(error, url: downloadURL, timeout: self.container.configuration.requestTimeout))
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        guard let result = outcome.withLock({ $0 }) else { throw NimbusError(.networkFailure, reason: "The download ended without a result") }
        return try result.get()
    }

    /// The asset's file in the cache: its opened plaintext (a sealed asset, by checksum and
    /// place) or its bytes (by checksum).
    private func cachedFile(_ asset: Asset, checksum: String) -> URL? {
        guard let context = asset.sealContext else { return container.assetCache.cached(checksum) }
        let opened = openedFile(asset, context)
        return FileManager.default.fileExists(atPath: opened.path) ? opened : nil
    }

    /// A download into the cache's directory, opening the bytes on the way when the asset is sealed.
    private func makeDownload(_ asset: Asset) throws -> AssetDownload {
        let opener = asset.sealContext.map { AssetSealOpener(context: $0, key: container.assetKey) }
        return try AssetDownload(cache: container.assetCache, opener: opener)
    }

    /// The downloaded file in place, or the answer's error: a non-2xx answer is the server's
    /// error (its body was collected apart), else `AssetDownload.finish`'s checks.
    private func finish(_ download: AssetDownload, _ asset: Asset, checksum: String, body: Data, response: URLResponse) throws -> URL {
        guard let http = response as? HTTPURLResponse else {
            download.discard()
            throw JSON.bad("The download's answer is not HTTP")
        }
        if !(200..<300).contains(http.statusCode) {
            download.discard()
            try Transport.check(http, data: body, zoneID: .default)
        }
        let target = asset.sealContext.map { openedFile(asset, $0) } ?? container.assetCache.fileURL(for: checksum)
        return try download.finish(checksum: checksum, size: asset.size, as: target)
    }
}
