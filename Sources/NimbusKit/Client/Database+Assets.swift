import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Database {
    /// The asset's bytes as a local file: from the cache when these bytes were downloaded before,
    /// else downloaded, verified against `fileChecksum` (a mismatch is `assetCorrupted`, and no
    /// file) and cached.
    public func downloadAsset(_ asset: Asset) async throws -> URL {
        guard let checksum = asset.fileChecksum else {
            if let file = asset.fileURL { return file }
            throw NimbusError(.invalidArguments, reason: "The asset has neither a checksum nor a file.")
        }
        let cache = container.assetCache
        if let file = cache.cached(checksum) { return file }
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
        return try admit(temporary, response: response, checksum: checksum, size: asset.size)
    }

    /// The same as `downloadAsset`, blocking the calling thread (for CloudKit's synchronous
    /// `CKAsset.fileURL`). It waits on URLSession's own queue, never on the task pool.
    public func downloadAssetBlocking(_ asset: Asset) throws -> URL {
        guard let checksum = asset.fileChecksum, let downloadURL = asset.downloadURL else {
            if let file = asset.fileURL { return file }
            throw NimbusError(.invalidArguments, reason: "The asset has no downloadURL: fetch its record from the server first.")
        }
        if let file = container.assetCache.cached(checksum) { return file }
        let outcome = Locked<Result<URL, NimbusError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        // Without a size, the default maxAssetBytes bounds it (a fetched asset always has one).
        transport.startDownload(transport.request(downloadURL, method: "GET"), limit: .asset(size: asset.size, .defaults)) { downloaded in
            let result: Result<URL, NimbusError>
            switch downloaded {
            case .success(let (file, response)):
                result = Result { try self.admit(file, response: response, checksum: checksum, size: asset.size) }
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

    private func admit(_ temporary: URL, response: URLResponse, checksum: String, size: Int64?) throws -> URL {
        guard let http = response as? HTTPURLResponse else { throw JSON.bad("The download's answer is not HTTP") }
        if !(200..<300).contains(http.statusCode) {
            let body = (try? Data(contentsOf: temporary)) ?? Data()
            try? FileManager.default.removeItem(at: temporary)
            try Transport.check(http, data: body, zoneID: .default)
        }
        return try container.assetCache.admit(downloaded: temporary, checksum: checksum, expectedSize: size)
    }
}
