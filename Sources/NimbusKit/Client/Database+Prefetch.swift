import Foundation

extension Database {
    /// Downloads one prefetch runs at a time.
    public static let assetPrefetchConcurrency = 4

    /// The records with their assets (lists of assets included) downloaded into the asset cache
    /// and each asset's `fileURL` set to its cached file, so that reading an asset of a fetched
    /// record never waits for the network. Each distinct checksum is downloaded once, at most
    /// `assetPrefetchConcurrency` at a time, verified against the checksum; an encrypted asset
    /// (`Asset.isEncrypted`) is opened, and its `fileURL` is the plaintext. A download that got no
    /// answer (or a 5xx, 408, 429) throws: the caller fetches again later. An asset the server
    /// no longer has, or whose bytes do not match their checksum, keeps no file; its error shows
    /// when it is read (`downloadAsset`).
    public func downloadingAssets(of records: [Record]) async throws -> [Record] {
        try await prefetchingAssets(of: records).records
    }

    /// `downloadingAssets`, for the engine: a record with an encrypted asset that does not open
    /// on this device (`decryptionFailed`: changed, cut, reordered or moved; `encryptionKeyMissing`)
    /// leaves `records` for `unreadable`, as a record whose encrypted value does not open
    /// (CLIENT.md: parked where the app sees it, never garbage).
    package func openingAssets(of records: [Record]) async throws -> (records: [Record], unreadable: [UnreadableRecord]) {
        let fetched = try await prefetchingAssets(of: records)
        guard !fetched.unopened.isEmpty else { return (fetched.records, []) }
        var readable: [Record] = []
        var unreadable: [UnreadableRecord] = []
        for record in fetched.records {
            var failure: NimbusError?
            for value in record.fields.values where failure == nil { Database.collectAssets(value) { asset in
                if failure == nil, let key = Database.downloadKey(asset) { failure = fetched.unopened[key] }
            } }
            if let failure {
                unreadable.append(UnreadableRecord(recordID: record.id, recordType: record.recordType, error: failure))
            } else {
                readable.append(record)
            }
        }
        return (readable, unreadable)
    }

    /// The records with their assets downloaded, and the sealed assets that did not open (by `downloadKey`).
    private func prefetchingAssets(of records: [Record]) async throws -> (records: [Record], unopened: [String: NimbusError]) {
        var wanted: [String: Asset] = [:]
        for record in records {
            for value in record.fields.values { Database.collectAssets(value) { asset in
                if let key = Database.downloadKey(asset), asset.downloadURL != nil, wanted[key] == nil { wanted[key] = asset }
            } }
        }
        guard !wanted.isEmpty else { return (records, [:]) }
        let (files, unopened) = try await downloadAll(Array(wanted.values))
        let localized = records.map { record in
            var record = record
            for (key, value) in record.fields { record.fields[key] = Database.localize(value, files) }
            // The base copy's assets too: they are the same bytes, and a local edit compares by content.
            if let base = record.serverFields {
                record.serverFields = base.mapValues { Database.localize($0, files) }
            }
            return record
        }
        return (localized, unopened)
    }

    /// Files by `downloadKey` for the assets, downloaded with bounded concurrency.
    private func downloadAll(_ assets: [Asset]) async throws -> ([String: URL], unopened: [String: NimbusError]) {
        try await withThrowingTaskGroup(of: (String, Result<URL, NimbusError>?).self) { group in
            var files: [String: URL] = [:]
            var unopened: [String: NimbusError] = [:]
            var next = 0
            func startNext() {
                guard next < assets.count else { return }
                let asset = assets[next]
                next += 1
                group.addTask {
                    guard let key = Database.downloadKey(asset) else { return ("", nil) }
                    do {
                        // An encrypted asset's file is the opened plaintext (`downloadAsset`).
                        return (key, .success(try await self.downloadWaitingOutRateLimits(asset)))
                    } catch let error as NimbusError where asset.isEncrypted
                                && (error.code == .decryptionFailed || error.code == .encryptionKeyMissing) {
                        // Not a sealed file of its field, or no key: its record is unreadable here.
                        return (key, .failure(error))
                    } catch let error as NimbusError where !error.isRetryable && error.code != .notAuthenticated {
                        // Corrupted or gone: read lazily, where the error can be seen.
                        return (key, nil)
                    }
                }
            }
            for _ in 0..<min(Database.assetPrefetchConcurrency, assets.count) { startNext() }
            while let (key, outcome) = try await group.next() {
                switch outcome {
                case .success(let file)?: files[key] = file
                case .failure(let error)?: unopened[key] = error
                case nil: break
                }
                startNext()
            }
            return (files, unopened)
        }
    }

    /// Times a prefetch's download waits out the server's rate limit (THROTTLED, after its
    /// `retryAfter`, at most 30 s each) before the fetch throws: a first sync of a zone with many
    /// assets asks for them faster than a device's burst allows, and should slow down, not fail.
    public static let prefetchRateLimitWaits = 5

    /// `downloadAsset`, waiting out a rate limit up to `prefetchRateLimitWaits` times.
    private func downloadWaitingOutRateLimits(_ asset: Asset) async throws -> URL {
        var waits = 0
        while true {
            do {
                return try await downloadAsset(asset)
            } catch let error as NimbusError where error.code == .requestRateLimited && waits < Database.prefetchRateLimitWaits {
                waits += 1
                try await error.waitOutRetryAfter(otherwise: 1)
            }
        }
    }

    static func collectAssets(_ value: RecordValue, _ found: (Asset) -> Void) {
        switch value {
        case .asset(let asset): found(asset)
        case .list(let values, _): for element in values { collectAssets(element, found) }
        default: break
        }
    }

    static func localize(_ value: RecordValue, _ files: [String: URL]) -> RecordValue {
        switch value {
        case .asset(var asset):
            if let key = downloadKey(asset), let file = files[key] { asset.fileURL = file }
            return .asset(asset)
        case .list(let values, let type):
            return .list(values.map { localize($0, files) }, elementType: type)
        default:
            return value
        }
    }
}
