import Foundation

// Encrypted assets (CLIENT.md § End-to-end encryption). On the wire an encrypted asset is a plain
// ASSETID (API.md: assets are opaque; the schema cannot flag them), so the reader must know which
// fields are sealed: the app declares them (`encryptedAssetFields`). A declared field is sealed
// before upload and opened on every read (`downloadAsset`, the prefetch of fetches and of the
// engine, `downloadDecryptedAsset`), so bytes that are not a sealed file of that very record and
// field — such as a plaintext file a server put in their place — are `decryptionFailed`, never data.

extension Container {
    /// The asset fields this app encrypts, by record type: `["HistoryItemContent": ["asset"]]`.
    /// Their files are sealed before upload (also when set with a plain `.asset`; each file of an
    /// `ASSETID_LIST` on its own, bound to the record and field, not to its place), and every
    /// download of them is opened into the cache (`fileURL` is the plaintext). Every device of the
    /// app declares the same fields. Assets set through `encryptedValues` are sealed in any case.
    public var encryptedAssetFields: [String: Set<String>] {
        get { keyStoreBox.withLock { $0.encryptedAssets } }
        set { keyStoreBox.withLock { $0.encryptedAssets = newValue } }
    }

    /// The record with the assets of its declared encrypted fields marked with where they are
    /// bound (`Asset.sealContext`), so that reading them opens the seal.
    func markingEncryptedAssets(_ record: Record, declared: [String: Set<String>]) -> Record {
        guard let fields = declared[record.recordType], !fields.isEmpty else { return record }
        var marked = record
        for field in fields {
            guard let value = record.fields[field] else { continue }
            let context = sealContext(record, field: field)
            marked.fields[field] = Self.mark(value, context)
            if let base = record.serverFields?[field] { marked.serverFields?[field] = Self.mark(base, context) }
        }
        return marked
    }

    private static func mark(_ value: RecordValue, _ context: SealContext) -> RecordValue {
        switch value {
        case .asset(var asset):
            asset.sealContext = context
            return .asset(asset)
        case .list(let values, let type): return .list(values.map { mark($0, context) }, elementType: type)
        default: return value
        }
    }

    /// What to send for an encrypted asset of a record's field: an uploaded or fetched one as it
    /// is (the server holds its sealed bytes; the plaintext in the cache is never uploaded), a
    /// local file with its `SealedUpload` (the file is sealed as the upload's body is sent; no
    /// temporary file). A file whose sealed form would pass `maxAssetBytes` is refused before it
    /// is read, with the largest size that fits.
    func sealedForUpload(_ asset: Asset, of record: Record, field: String, limits: ServerLimits) throws -> (Asset, SealedUpload?) {
        if asset.receipt != nil { return (asset, nil) }
        let cached = asset.fileURL.map { $0.standardizedFileURL.path.hasPrefix(assetCache.directory.standardizedFileURL.path) } ?? true
        if asset.isOnServer && asset.fileChecksum != nil && cached {
            var reference = asset
            reference.fileURL = nil
            return (reference, nil)
        }
        guard let file = asset.fileURL else { return (asset, nil) }
        let sealedSize = try Self.checkSealedSize(of: file, record: record, field: field, limits: limits)
        let context = sealContext(record, field: field)
        guard let newest = try keyRing().newest else { throw EncryptionError.keyMissing(context, keyID: nil).nimbusError }
        let salt = try AssetSeal.salt(for: file, key: newest, context: context)
        return (Asset(fileURL: file), SealedUpload(file: file, key: newest, context: context, salt: salt, sealedSize: sealedSize ?? 0))
    }

    /// `limitExceeded` naming the file's size, its sealed size and the largest file that fits,
    /// when sealing it would pass the server's `maxAssetBytes` (which counts the bytes it stores);
    /// else the sealed size (nil when the file cannot be read: the upload refuses it then).
    @discardableResult
    static func checkSealedSize(of file: URL, record: Record, field: String, limits: ServerLimits) throws -> Int64? {
        guard let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value else { return nil }
        let sealed = AssetSeal.sealedSize(ofPlaintext: size)
        guard sealed > limits.maxAssetBytes else { return sealed }
        throw NimbusError(.limitExceeded, reason: "The asset file \(file.lastPathComponent) of \(record.recordName).\(field) has \(size) "
            + "bytes, \(sealed) once sealed for end-to-end encryption (21 + 16 per 64 KiB segment); the server takes at most "
            + "\(limits.maxAssetBytes) (maxAssetBytes), so an encrypted asset can have at most "
            + "\(AssetSeal.largestPlaintext(sealedWithin: limits.maxAssetBytes)) bytes.", itemName: record.recordName)
    }
}

extension RecordValue {
    /// The assets to seal of a field, as the value that carries them on the wire: the asset or
    /// list of assets of an encrypted value (`encryptedValues[f] = .asset(…)` or `.list([.asset(…), …])`),
    /// or of a declared field (or one already marked encrypted). Nil for anything else.
    func encryptedAssets(declared: Bool) -> RecordValue? {
        switch self {
        case .encrypted(let value):
            guard let plaintext = value.plaintext, plaintext.isAssets else { return nil }
            return plaintext
        case .asset, .list:
            return isAssets && (declared || hasEncryptedAsset) ? self : nil
        default:
            return nil
        }
    }

    /// True for an asset and for a list of assets (`ASSETID_LIST`, empty included).
    var isAssets: Bool {
        switch self {
        case .asset: return true
        case .list(let values, let type): return type == .asset || (!values.isEmpty && values.allSatisfy { $0.assetValue != nil })
        default: return false
        }
    }

    /// True when the value is an asset marked encrypted, or a list holding one.
    var hasEncryptedAsset: Bool {
        switch self {
        case .asset(let asset): return asset.isEncrypted
        case .list(let values, _): return values.contains { $0.assetValue?.isEncrypted == true }
        default: return false
        }
    }

    /// The value with each of its assets (itself, or every element of a list) replaced by `transform`'s.
    func mappingAssets(_ transform: (Asset) throws -> Asset) rethrows -> RecordValue {
        switch self {
        case .asset(let asset): return .asset(try transform(asset))
        case .list(let values, let type): return .list(try values.map { try $0.mappingAssets(transform) }, elementType: type)
        default: return self
        }
    }
}

extension Database {
    /// The key of an asset in one fetch's downloads: its checksum, and for a sealed asset also
    /// where it is bound (the same bytes under another record or field must not open there).
    static func downloadKey(_ asset: Asset) -> String? {
        guard let checksum = asset.fileChecksum else { return nil }
        guard let context = asset.sealContext else { return checksum }
        return "\(checksum)|\(context.container)|\(context.zone)|\(context.recordType)|\(context.recordName)|\(context.field)"
    }

    /// The opened plaintext of a sealed asset in the cache: named by its checksum and place.
    func openedFile(_ asset: Asset, _ context: SealContext) -> URL {
        let place = Database.downloadKey(asset) ?? UUID().uuidString
        return container.assetCache.directory.appendingPathComponent("\(Database.cacheName(Checksum.of(Data(place.utf8)))).plain")
    }
}

extension Container {
    /// The key of a key id for opening an asset; when the ring lacks it, the key store is read
    /// again first (another process, the app beside its extension, may have added the key).
    func assetKey(_ id: UInt32) throws -> AccountKey? {
        if let key = try keyRing().key(id: id) { return key }
        reloadKeys()
        return try keyRing().key(id: id)
    }
}

extension AssetSeal {
    /// The salt of a file sealed for `context`: derived from the zone key, the key id, the place
    /// and the file's SHA-256, so that sealing the same file for the same field again (a retried
    /// create) gives the same bytes and checksum, and two different files never share a file key
    /// (that would need a SHA-256 collision). The segment nonces are counters under that file key.
    static func salt(for file: URL, key: AccountKey, context: SealContext) throws -> Data {
        guard let digest = try? Checksum.ofFile(file) else {
            throw NimbusError(.assetFileNotFound, reason: "The asset file \(file.path) cannot be read.")
        }
        let zoneKey = SealFormat.zoneKey(key.bytes, container: context.container, zone: context.zone)
        let saltKey = Primitives.hkdf(ikm: zoneKey, salt: Data(), info: Data("asset salt".utf8), length: Primitives.keySize)
        let message = SealFormat.header(keyID: key.id) + context.associatedData(kind: UInt8(ascii: "A")) + Data(digest.checksum.utf8)
        return Primitives.hmacSHA256(key: saltKey, message: message).prefix(16)
    }
}
