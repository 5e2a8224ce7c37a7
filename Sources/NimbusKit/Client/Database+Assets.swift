import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Database {
    /// Uploads the local files of the assets in the operations' records (those without a
    /// receipt) and returns the operations with receipts in place. Each attempt gets fresh
    /// single-use upload URLs.
    func uploadAssets(of operations: [RecordOperation]) async throws -> [RecordOperation] {
        var pending: [(operation: Int, field: String, asset: Asset)] = []
        for (index, operation) in operations.enumerated() {
            guard let record = operation.record else { continue }
            let keys = operation.kind == .update || operation.kind == .forceUpdate ? record.changedKeys : Array(record.fields.keys)
            for key in keys.sorted() {
                if case .asset(let asset)? = record.fields[key], asset.receipt == nil, asset.fileURL != nil {
                    pending.append((index, key, asset))
                }
            }
        }
        guard !pending.isEmpty else { return operations }
        var prepared = operations
        let limits = try await container.limits()
        for start in stride(from: 0, to: pending.count, by: limits.maxAssetTokensPerRequest) {
            let slice = pending[start..<min(pending.count, start + limits.maxAssetTokensPerRequest)]
            // Tokens of one request share a zone.
            for zone in Set(slice.map { operations[$0.operation].recordID.zoneID }) {
                let items = slice.filter { operations[$0.operation].recordID.zoneID == zone }
                let urls = try await uploadURLs(for: items.map { (operations[$0.operation].record, $0.field) }, zone: zone)
                for (item, uploadURL) in zip(items, urls) {
                    guard let file = item.asset.fileURL else { continue }
                    var uploaded = try await upload(file: file, to: uploadURL, limits: limits)
                    uploaded.fileURL = file
                    prepared[item.operation].record?.fields[item.field] = .asset(uploaded)
                }
            }
        }
        return prepared
    }

    private func uploadURLs(for items: [(record: Record?, field: String)], zone: ZoneID) async throws -> [URL] {
        let tokens: [JSONObject] = items.map { item in
            ["recordType": item.record?.recordType ?? "", "fieldName": item.field, "recordName": item.record?.recordName ?? ""]
        }
        let answer = try await transport.post(url("assets/upload"), body: ["zoneID": ["zoneName": zone.zoneName], "tokens": tokens],
                                              zoneID: zone)
        guard let answered = JSON.array(answer["tokens"]), answered.count == items.count else {
            throw JSON.bad("assets/upload answered another number of tokens than asked for")
        }
        return try answered.map { item in
            guard let text = JSON.string(JSON.object(item)?["url"]), let url = URL(string: text) else {
                throw JSON.bad("An upload token has no url")
            }
            return url
        }
    }

    /// Streams one file to an upload URL and returns the asset with its receipt.
    func upload(file: URL, to uploadURL: URL, limits: ServerLimits) async throws -> Asset {
        let size: Int64
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
            size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        } catch {
            throw NimbusError(.assetFileNotFound, reason: "The asset file \(file.path) cannot be read: \(error.localizedDescription)")
        }
        guard size <= limits.maxAssetBytes else {
            throw NimbusError(.limitExceeded, reason: "The asset file \(file.lastPathComponent) has \(size) bytes; "
                + "the server takes at most \(limits.maxAssetBytes) (maxAssetBytes).")
        }
        var request = transport.request(uploadURL, method: "POST")
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await transport.session.upload(for: request, fromFile: file)
        } catch {
            throw Transport.networkError(error, url: uploadURL)
        }
        guard let http = response as? HTTPURLResponse else { throw JSON.bad("The upload's answer is not HTTP") }
        try Transport.check(http, data: data, zoneID: .default)
        let answer = try JSON.decodeObject(data)
        guard let single = JSON.object(answer["singleFile"]), let receipt = JSON.string(single["receipt"]) else {
            throw JSON.bad("The upload answered without singleFile.receipt")
        }
        return Asset(fileChecksum: JSON.string(single["fileChecksum"]), size: JSON.int64(single["size"]), receipt: receipt)
    }

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
            throw Transport.networkError(error, url: downloadURL)
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
                result = .failure(Transport.networkError(error, url: downloadURL))
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
