import Foundation

/// An asset field. Made from a local file, it is uploaded when its record is saved; fetched from
/// the server (`record(for:)`, queries, zone changes), its bytes are downloaded, verified against
/// the checksum and cached before the fetch returns, so `fileURL` is a local file.
public final class CKAsset: NSObject, CKRecordValueProtocol, Sendable {
    private let state: Locked<Asset>
    /// The database a fetched asset downloads from.
    let database: Database?

    public init(fileURL: URL) {
        state = Locked(Asset(fileURL: fileURL))
        database = nil
    }

    init(asset: Asset, database: Database? = nil) {
        state = Locked(asset)
        self.database = database
    }

    var asset: Asset { state.withLock { $0 } }

    /// The local file: the file it was made from, or the downloaded copy (nil if the download failed).
    /// A fetched record's assets are downloaded before the fetch returns; only an asset of a record
    /// the app built from fetched values downloads here, blocking, on first access.
    public var fileURL: URL? {
        let current = asset
        if let file = current.fileURL, current.downloadURL == nil || FileManager.default.fileExists(atPath: file.path) {
            return file
        }
        guard let database = database ?? CKAsset.defaultDatabase() else { return nil }
        guard let file = try? database.downloadAssetBlocking(current) else { return nil }
        state.withLock { $0.fileURL = file }
        return file
    }

    private static func defaultDatabase() -> Database? {
        guard let configuration = NimbusCK.configuration else { return nil }
        let container = Container(identifier: "", configuration: configuration)
        _ = NimbusCK.applyEncryptedAssetFields(to: container)
        return container.privateDatabase
    }
}
