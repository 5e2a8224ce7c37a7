import Foundation

/// A changed record this device could not open, and why (`encryptionKeyMissing`, `decryptionFailed`).
public struct UnreadableRecord: Sendable, Hashable {
    public var recordID: RecordID
    public var recordType: String
    public var error: NimbusError
}

extension Container {
    /// A modify answer item with its encrypted values opened (a failure to open fails the item).
    /// A conflict's `serverRecord` is opened too, so a merge compares plaintexts.
    func openResult(_ result: Result<RecordResult, NimbusError>) -> Result<RecordResult, NimbusError> {
        result.mapError { error in
            var opened = error
            if let server = error.serverRecord, let readable = try? open(server) { opened.serverRecord = readable }
            return opened
        }.flatMap { item in
            guard case .saved(let record) = item else { return .success(item) }
            return Result { .saved(try open(record)) }.mapError { $0 as? NimbusError ?? NimbusError(.decryptionFailed, reason: "\($0)") }
        }
    }

    /// A page of changes with its records opened; those that do not open move to `unreadable`.
    func openChanges(_ page: ZoneChanges) -> ZoneChanges {
        var opened = page
        opened.modified = []
        opened.modified.reserveCapacity(page.modified.count)
        for record in page.modified {
            do {
                opened.modified.append(try open(record))
            } catch {
                let nimbus = error as? NimbusError ?? NimbusError(.decryptionFailed, reason: "\(error)")
                opened.unreadable.append(UnreadableRecord(recordID: record.id, recordType: record.recordType, error: nimbus))
            }
        }
        return opened
    }
}

extension Database {
    /// Seals the operations' encrypted values and encrypted asset files, then uploads the assets
    /// (`uploadAssets`). An operation that cannot be sealed (no key) is refused alone.
    func uploadAssets(sealing operations: [RecordOperation], limits: ServerLimits) async throws -> PreparedOperations {
        var sealed = operations
        var refused: [Int: NimbusError] = [:]
        for (index, operation) in operations.enumerated() {
            guard let record = operation.record, record.fields.values.contains(where: \.isEncrypted) else { continue }
            do {
                var ready = try container.seal(record)
                for (key, value) in ready.fields {
                    // An encrypted asset travels as an ASSETID whose file is the sealed one.
                    guard case .encrypted(let encrypted) = value, case .asset(let asset)? = encrypted.plaintext else { continue }
                    if asset.receipt != nil || asset.fileURL == nil {
                        ready.fields[key] = .asset(asset)
                    } else if let file = asset.fileURL {
                        ready.fields[key] = .asset(Asset(fileURL: try container.sealAsset(file, for: record, field: key)))
                    }
                }
                sealed[index].record = ready
            } catch {
                refused[index] = error as? NimbusError ?? NimbusError(.encryptionKeyMissing, reason: "\(error)")
            }
        }
        var prepared = try await uploadAssets(of: sealed, limits: limits)
        for (index, error) in refused { prepared.refused[index] = error }
        return prepared
    }

    /// Downloads an encrypted asset of a record's field and opens it into the cache: the plaintext
    /// file (streamed, 64 KiB at a time). `decryptionFailed` when the bytes were changed, cut,
    /// reordered or moved from another record or field; `encryptionKeyMissing` without the key.
    public func downloadDecryptedAsset(of record: Record, field: String) async throws -> URL {
        let value = record.fields[field]
        guard let asset = value?.assetValue ?? value?.decrypted?.assetValue else {
            throw NimbusError(.invalidArguments, reason: "\(record.recordType) \(record.recordName) has no asset in field \(field).")
        }
        let sealed = try await downloadAsset(asset)
        // Cached per checksum and place: the same bytes moved to another record or field must not open there.
        let place = "\(asset.fileChecksum ?? UUID().uuidString)|\(container.identifier)|\(record.zoneID.zoneName)|\(record.recordType)|\(record.recordName)|\(field)"
        let plain = container.assetCache.directory.appendingPathComponent("\(Database.cacheName(Checksum.of(Data(place.utf8)))).plain")
        if FileManager.default.fileExists(atPath: plain.path) { return plain }
        let partial = plain.appendingPathExtension("partial")
        try container.openAsset(sealed, for: record, field: field, to: partial)
        _ = try? FileManager.default.removeItem(at: plain)
        try FileManager.default.moveItem(at: partial, to: plain)
        return plain
    }

    static func cacheName(_ checksum: String) -> String {
        checksum.replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "=", with: "")
    }
}
