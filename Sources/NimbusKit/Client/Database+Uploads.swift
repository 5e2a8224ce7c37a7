import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A batch's operations after their asset files were uploaded: receipts in place, and the
/// operations whose own input failed (a missing or unreadable file, one over `maxAssetBytes`, an
/// upload the server refused), by index, with the error they fail with. Those are answered as
/// item failures; the rest of the batch is sent.
struct PreparedOperations: Sendable {
    var operations: [RecordOperation]
    var refused: [Int: NimbusError] = [:]
}

extension Database {
    /// Times an interrupted upload (no answer, a 408, a 5xx) is sent again, from the first byte,
    /// each time to a fresh single-use URL, before the batch fails as a whole.
    static let uploadAttempts = 3

    /// Uploads the local files of the assets in the operations' records (those without a
    /// receipt); an asset with a place in `seals` is sealed as it is sent. A failure of one
    /// change's own file refuses that change only; a failure of the requests themselves
    /// (network, 5xx, 408, 429) throws, and the caller retries the batch.
    func uploadAssets(of operations: [RecordOperation], limits: ServerLimits,
                      seals: [SealedUpload.Place: SealedUpload] = [:]) async throws -> PreparedOperations {
        var prepared = PreparedOperations(operations: operations)
        // `element`: the asset's place in an ASSETID_LIST field, nil for an ASSETID field.
        var pending: [(operation: Int, field: String, element: Int?, file: URL)] = []
        for (index, operation) in operations.enumerated() {
            guard let record = operation.record else { continue }
            let keys = operation.kind == .update || operation.kind == .forceUpdate ? record.changedKeys : Array(record.fields.keys)
            for key in keys.sorted() {
                for (element, asset) in Database.assetsToUpload(record.fields[key]) {
                    guard let file = asset.fileURL else { continue }
                    do {
                        try Database.checkAssetFile(file, field: key, record: record, limits: limits)
                        pending.append((index, key, element, file))
                    } catch let error as NimbusError {
                        if prepared.refused[index] == nil { prepared.refused[index] = error }
                    }
                }
            }
        }
        pending.removeAll { prepared.refused[$0.operation] != nil }
        for start in stride(from: 0, to: pending.count, by: limits.maxAssetTokensPerRequest) {
            let slice = pending[start..<min(pending.count, start + limits.maxAssetTokensPerRequest)]
            // Tokens of one request share a zone.
            for zone in Set(slice.map { operations[$0.operation].recordID.zoneID }) {
                let items = slice.filter { operations[$0.operation].recordID.zoneID == zone }
                let urls = try await uploadURLs(for: items.map { (operations[$0.operation].record, $0.field) }, zone: zone)
                for (item, uploadURL) in zip(items, urls) where prepared.refused[item.operation] == nil {
                    do {
                        let seal = seals[SealedUpload.Place(operation: item.operation, field: item.field, element: item.element)]
                        var uploaded = try await uploadResending(seal.map(UploadBody.sealed) ?? .file(item.file), firstURL: uploadURL,
                                                                 record: operations[item.operation].record, field: item.field, zone: zone)
                        uploaded.fileURL = item.file
                        let field = prepared.operations[item.operation].record?.fields[item.field]
                        if let element = item.element, case .list(var assets, let type)? = field, assets.indices.contains(element) {
                            assets[element] = .asset(uploaded)
                            prepared.operations[item.operation].record?.fields[item.field] = .list(assets, elementType: type)
                        } else {
                            prepared.operations[item.operation].record?.fields[item.field] = .asset(uploaded)
                        }
                    } catch let error as NimbusError where error.isChangeFailure {
                        prepared.refused[item.operation] = error
                    }
                }
            }
        }
        return prepared
    }

    /// The assets of a field value that still need their bytes uploaded (a local file, no receipt):
    /// an ASSETID's (element nil), or each of an ASSETID_LIST's with its place in the list.
    static func assetsToUpload(_ value: RecordValue?) -> [(element: Int?, asset: Asset)] {
        switch value {
        case .asset(let asset)? where asset.receipt == nil && asset.fileURL != nil:
            return [(nil, asset)]
        case .list(let values, _)?:
            return values.enumerated().compactMap { index, element in
                guard case .asset(let asset) = element, asset.receipt == nil, asset.fileURL != nil else { return nil }
                return (index, asset)
            }
        default:
            return []
        }
    }

    /// A local file an asset can be uploaded from: there, readable, a file, within `maxAssetBytes`.
    static func checkAssetFile(_ file: URL, field: String, record: Record, limits: ServerLimits) throws {
        let size: Int64
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
            guard (attributes[.type] as? FileAttributeType) != .typeDirectory else {
                throw NimbusError(.assetFileNotFound, reason: "The asset file \(file.path) of \(record.recordName).\(field) is a directory.")
            }
            size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        } catch let error as NimbusError {
            throw error
        } catch {
            throw NimbusError(.assetFileNotFound, reason: "The asset file \(file.path) of \(record.recordName).\(field) cannot be read "
                + "(\(error.localizedDescription)): put the file back or save the record with another asset, then retryFailed().",
                itemName: record.recordName)
        }
        guard FileManager.default.isReadableFile(atPath: file.path) else {
            throw NimbusError(.assetFileNotFound, reason: "The asset file \(file.path) of \(record.recordName).\(field) is not readable.",
                              itemName: record.recordName)
        }
        guard size <= limits.maxAssetBytes else {
            throw NimbusError(.limitExceeded, reason: "The asset file \(file.lastPathComponent) of \(record.recordName).\(field) has \(size) "
                + "bytes; the server takes at most \(limits.maxAssetBytes) (maxAssetBytes).", itemName: record.recordName)
        }
    }

    /// Uploads one file; an attempt that got no answer (or a 408, 5xx, 429) is repeated from the
    /// first byte on a fresh URL request (a sealed body: a fresh stream) to a fresh single-use URL.
    private func uploadResending(_ body: UploadBody, firstURL: URL, record: Record?, field: String, zone: ZoneID) async throws -> Asset {
        var uploadURL = firstURL
        var attempt = 1
        while true {
            do {
                return try await upload(body, to: uploadURL)
            } catch let error as NimbusError where error.isRetryable && attempt < Database.uploadAttempts {
                attempt += 1
                try await error.waitOutRetryAfter(otherwise: 0)
                uploadURL = try await uploadURLs(for: [(record, field)], zone: zone)[0]
            }
        }
    }

    private func uploadURLs(for items: [(record: Record?, field: String)], zone: ZoneID) async throws -> [URL] {
        let tokens: [JSONValue] = items.map { item in
            ["recordType": .string(item.record?.recordType ?? ""), "fieldName": .string(item.field), "recordName": .string(item.record?.recordName ?? "")]
        }
        let answer = try await transport.post(url("assets/upload"), body: ["zoneID": JSON.zoneID(zone), "tokens": .array(tokens)],
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

    /// Streams one file to an upload URL (a new URL request: the body is read from the file's
    /// first byte) and returns the asset with its receipt.
    func upload(file: URL, to uploadURL: URL) async throws -> Asset {
        try await upload(.file(file), to: uploadURL)
    }

    /// Streams one body to an upload URL (a new URL request: the body is read from its first
    /// byte) and returns the asset with its receipt. A sealed body that stopped because its file
    /// could not be read fails with that (`assetFileNotFound`), not as a network failure.
    func upload(_ body: UploadBody, to uploadURL: URL) async throws -> Asset {
        var request = transport.request(uploadURL, method: "POST")
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        let data: Data
        let response: URLResponse
        var sealedBody: SealedBody?
        do {
            switch body {
            case .file(let file):
                (data, response) = try await transport.session.upload(for: request, fromFile: file)
            case .sealed(let upload):
                sealedBody = try upload.attachBody(to: &request)
                (data, response) = try await transport.session.data(for: request)
            }
        } catch let error as NimbusError {
            throw error
        } catch {
            if let failure = sealedBody?.failure { throw failure }
            throw Transport.networkError(error, url: uploadURL, timeout: request.timeoutInterval)
        }
        guard let http = response as? HTTPURLResponse else { throw JSON.bad("The upload's answer is not HTTP") }
        try Transport.check(http, data: data, zoneID: .default)
        let answer = try JSON.decodeObject(data)
        guard let single = JSON.object(answer["singleFile"]), let receipt = JSON.string(single["receipt"]) else {
            throw JSON.bad("The upload answered without singleFile.receipt")
        }
        let size = JSON.int64(single["size"])
        if case .sealed(let upload) = body, size != upload.sealedSize {
            // A body that ended early (a stream re-sent from where it was) must not become the asset.
            throw NimbusError(.networkFailure, reason: "The server received \(size ?? -1) bytes of the sealed asset "
                + "\(upload.file.lastPathComponent), not its \(upload.sealedSize): it is sent again.")
        }
        return Asset(fileChecksum: JSON.string(single["fileChecksum"]), size: size, receipt: receipt)
    }
}

/// What an upload sends: a file as it is, or a plaintext file sealed as it is sent.
enum UploadBody: Sendable {
    case file(URL)
    case sealed(SealedUpload)
}
