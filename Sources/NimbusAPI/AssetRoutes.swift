import Foundation
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport

/// `assets/upload` hands out upload URLs; `POST /assets/1/upload/{id}` streams the bytes into
/// the database; `GET /assets/1/download/{handle}` streams them back (ETag, Range).
struct AssetRoutes: Sendable {
    let assets: AssetStore
    let limits: Limits

    static let uploadPattern = "/assets/1/upload/:id"
    static let downloadPattern = "/assets/1/download/:handle"

    /// Which requests stream their bodies (the HTTP core asks before reading them).
    static func streamLimit(_ limits: Limits) -> @Sendable (HTTPRequestHead) -> Int? {
        let maximum = limits.maxAssetBytes
        return { head in head.method == "POST" && head.path.hasPrefix("/assets/1/upload/") ? maximum : nil }
    }

    func register(in router: inout HTTPRouter, api: API.RouteBuilder) {
        let assets = assets, limits = limits
        router.add("POST", Self.uploadPattern, api.streaming(Self.uploadPattern) { request, answering in
            try await Self.upload(request, bearer: answering.bearer, assets: assets, limits: limits)
        })
        router.add("GET", Self.downloadPattern, api.streaming(Self.downloadPattern) { request, answering in
            try await Self.download(request, answering: answering, assets: assets)
        })
    }

    /// `assets/upload` (a database operation).
    static func requestUploads(_ context: DatabaseRoutes.Context, _ request: AssetUploadsRequest, assets: AssetStore,
                               schemas: SchemaStore) async throws -> HTTPResponse? {
        let container = context.session.container, environment = context.session.environment
        let schema = try await schemas.on(context.execution).schema(container: container, environment: environment)
        if let refused = request.uploads.first(where: { Self.uploadProblem($0, schema: schema, development: nil, environment: environment) != nil }) {
            // Development is read only to word a production refusal: deploy it, or "did you mean …?".
            let development = environment == .production ? try await schemas.on(context.execution).schema(container: container, environment: .development) : nil
            let problem = Self.uploadProblem(refused, schema: schema, development: development, environment: environment)
            throw SyncError(.badRequest, problem ?? "Upload URLs are only for ASSETID fields.")
        }
        let requests = request.uploads.map { (recordType: $0.recordType, fieldName: $0.fieldName, recordName: $0.recordName) }
        let ids = try await assets.on(context.execution).createUploads(context.session, zoneName: request.zoneName, requests: requests)
        let tokens: [JSONValue] = zip(requests, ids).map { request, id in
            .object(["recordName": .string(request.recordName), "fieldName": .string(request.fieldName),
                     "url": .string(context.baseURL + "/assets/1/upload/" + id)])
        }
        return Wire.json(.object(["tokens": .array(tokens)]))
    }

    /// Upload URLs are for ASSETID fields: a field the schema types otherwise is refused, and in
    /// production so is a type or field it lacks (development learns them when the record is saved).
    /// With `development` (production's refusals only), the reason says whether the type or field
    /// awaits a deploy or exists nowhere (`SchemaAdvice`).
    static func uploadProblem(_ upload: AssetUploadsRequest.Upload, schema: ContainerSchema, development: ContainerSchema?,
                              environment: Environment) -> String? {
        let onlyAssets = " Upload URLs are only for ASSETID (or ASSETID_LIST) fields."
        guard let type = schema.recordTypes[upload.recordType] else {
            guard environment == .production else { return nil }
            guard let development else { return "Record type \(upload.recordType) is not deployed to production." }
            return SchemaAdvice.missingRecordType(upload.recordType, container: schema.container, production: schema,
                                                  development: development) + onlyAssets
        }
        guard let fieldType = type.fields[upload.fieldName] else {
            guard environment == .production else { return nil }
            guard let development else { return "Field \(upload.fieldName) of \(upload.recordType) is not deployed to production." }
            return SchemaAdvice.missingField(upload.fieldName, of: upload.recordType, container: schema.container, production: schema,
                                             development: development) + onlyAssets
        }
        guard fieldType.base == .assetID else {
            return "Field \(upload.fieldName) of \(upload.recordType) is \(fieldType.name), not ASSETID; upload URLs are only for ASSETID "
                + "(or ASSETID_LIST) fields. Store small values in the field itself."
        }
        return nil
    }

    private static func upload(_ request: HTTPRequest, bearer: API.Bearer, assets: AssetStore, limits: Limits) async throws -> HTTPResponse {
        let assets = assets.on(request.execution)
        let digest = try bearer.digest()
        let session: Session
        switch try await assets.uploadAccess(tokenDigest: digest, uploadID: request.pathParameters["id"] ?? "") {
        case .unauthenticated: throw SyncError(.authenticationFailed, "The bearer token is unknown or revoked.")
        case .notFound: throw SyncError(.notFound, "There is no upload at \(request.path) (unknown, another user's, or already used).")
        case .granted(let granted, _): session = granted
        }
        let stream = request.bodyStream
        let uploaded: UploadedAsset
        do {
            uploaded = try await assets.upload(session, uploadID: request.pathParameters["id"] ?? "", next: { try await stream?.next() },
                                              maxBytes: limits.maxAssetBytes, quotaBytes: limits.userQuotaBytes)
        } catch let failure as HTTPBodyStream.Failure {
            if failure.status?.code == 413 {
                throw SyncError(.limitExceeded, "The asset is larger than maxAssetBytes (\(limits.maxAssetBytes) bytes).")
            }
            throw SyncError(.badRequest, "The upload did not complete: \(failure.reason)")
        }
        return Wire.json(.object(["singleFile": .object([
            "fileChecksum": .string(uploaded.fileChecksum), "size": .integer(uploaded.size), "receipt": .string(uploaded.receipt),
        ])]))
    }

    private static func download(_ request: HTTPRequest, answering: API.Answering, assets: AssetStore) async throws -> HTTPResponse? {
        let assets = assets.on(request.execution)
        let digest = try answering.bearer.digest()
        let (access, stored) = try await assets.downloadAccess(tokenDigest: digest, handle: request.pathParameters["handle"] ?? "")
        switch access {
        case .unauthenticated: throw SyncError(.authenticationFailed, "The bearer token is unknown or revoked.")
        case .notFound: throw SyncError(.notFound, "There is no asset at \(request.path).")
        case .granted: break
        }
        guard let asset = stored else { throw SyncError(.notFound, "There is no asset at \(request.path).") }
        let etag = "\"\(asset.fileChecksum)\""
        var headers: HTTPHeaders = ["ETag": etag, "Accept-Ranges": "bytes", "Cache-Control": "private, max-age=31536000, immutable"]
        if let match = request.headers["If-None-Match"],
           match.split(separator: ",").contains(where: { let tag = $0.trimmingCharacters(in: .whitespaces); return tag == etag || tag == "*" || tag == "W/\(etag)" }) {
            return HTTPResponse(status: .notModified, headers: headers)
        }
        var first: Int64 = 0, last = asset.size - 1
        var status = HTTPStatus.ok
        // RFC 9110 §13.1.5: a Range counts only if If-Range (when sent) is the current strong ETag;
        // anything else, a date included (assets carry no Last-Modified), gets the whole body.
        let ifRangeMatches = request.headers["If-Range"].map { $0.trimmingCharacters(in: .whitespaces) == etag } ?? true
        switch ByteRange.parse(ifRangeMatches ? request.headers["Range"] : nil, size: asset.size) {
        case .whole: break
        case .unsatisfiable:
            var response = ErrorResponse.make(SyncError(.badRequest, "The range is outside the asset's \(asset.size) bytes."))
            response.status = .rangeNotSatisfiable
            response.headers.add(name: "Content-Range", value: "bytes */\(asset.size)")
            return response
        case .range(let from, let to):
            first = from
            last = to
            status = .partialContent
            headers.add(name: "Content-Range", value: "bytes \(from)-\(to)/\(asset.size)")
        }
        headers.add(name: "Content-Type", value: "application/octet-stream")
        let length = asset.size == 0 ? 0 : Int(last - first + 1)
        let writer = answering.writer
        writer.startStreaming(status: status, headers: headers, contentLength: length)
        if length > 0 && request.method != "HEAD" {
            let chunk = Int64(AssetStore.assetChunkBytes)
            var index = Int(first / chunk)
            let end = Int(last / chunk) + 1
            streaming: while index < end {
                let batch = try await assets.assetChunks(assetID: asset.id, from: index, to: min(index + 4, end))
                guard !batch.isEmpty else { break }
                for bytes in batch {
                    let start = Int64(index) * chunk
                    let lower = Int(max(first - start, 0))
                    let upper = Int(min(last - start + 1, Int64(bytes.count)))
                    index += 1
                    guard lower < upper else { continue }
                    if !(await writer.write(Array(bytes[lower..<upper]))) { break streaming }
                }
            }
        }
        writer.finishStreaming()
        answering.answered()
        return nil
    }
}

/// A `Range: bytes=...` header (RFC 9110 §14.2): one range is served as 206; several, or a
/// syntax we do not read, get the whole body (200), as the contract allows.
enum ByteRange: Equatable {
    case whole
    case range(Int64, Int64)
    case unsatisfiable

    static func parse(_ header: String?, size: Int64) -> ByteRange {
        guard let header, header.hasPrefix("bytes=") else { return .whole }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let startText = spec[..<dash], endText = spec[spec.index(after: dash)...]
        if startText.isEmpty {
            // Suffix range: the last n bytes.
            guard let count = Int64(endText), count >= 0 else { return .whole }
            guard count > 0, size > 0 else { return .unsatisfiable }
            return .range(max(size - count, 0), size - 1)
        }
        guard let start = Int64(startText), start >= 0 else { return .whole }
        var end = size - 1
        if !endText.isEmpty {
            guard let parsed = Int64(endText), parsed >= start else { return .whole }
            end = min(parsed, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .range(start, end)
    }
}
