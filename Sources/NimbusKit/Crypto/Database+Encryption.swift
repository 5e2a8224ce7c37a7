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
    /// The page is taken over and opened where it is: each record in place (its fields are not
    /// copied), the records that opened moved up over those that did not, in page order.
    func openChanges(_ page: consuming ZoneChanges) -> ZoneChanges {
        let declared = encryptedAssetFields
        // A page without sealed values (as the decoder counted) has nothing to open: not copied.
        if page.sealedValues == 0 && declared.isEmpty { return page }
        var opened = page
        var kept = 0
        var opener: FieldOpener?  // one per page: the zone key, its context and the associated data's fixed part kept
        for index in opened.modified.indices {
            do {
                try open(&opened.modified[index], declared: declared, opener: &opener)
                if kept != index { opened.modified.swapAt(kept, index) }
                kept += 1
            } catch {
                let nimbus = error as? NimbusError ?? NimbusError(.decryptionFailed, reason: "\(error)")
                let record = opened.modified[index]
                opened.unreadable.append(UnreadableRecord(recordID: record.id, recordType: record.recordType, error: nimbus))
            }
        }
        opened.modified.removeSubrange(kept...)
        return opened
    }
}

extension Container {
    /// A notification from the channel with its encrypted fields opened, as a push's are by
    /// `KeyStorePushOpener`; when they do not open they stay sealed and `unreadable` says why.
    func openNotification(_ notification: NimbusNotification) -> NimbusNotification {
        let sealed = notification.fields.values.contains { value in
            if case .encrypted(let encrypted) = value { return encrypted.plaintext == nil }
            return false
        }
        guard sealed else { return notification }
        var opened = notification
        guard let id = notification.recordID, let type = notification.recordType else {
            opened.unreadable = NimbusError(.decryptionFailed, reason: "Notification \(notification.notificationID) carries encrypted "
                + "fields but no record name and type to open them with.")
            return opened
        }
        do {
            opened.fields = try open(Record(recordType: type, id: id, fields: notification.fields)).fields
        } catch {
            opened.unreadable = error as? NimbusError ?? NimbusError(.decryptionFailed, reason: "\(error)")
        }
        return opened
    }
}

extension Database {
    /// Seals the operations' encrypted values, then uploads the assets (`uploadAssets`), the
    /// encrypted asset files (set through `encryptedValues`, or in a field of
    /// `encryptedAssetFields`) sealed as they are sent (`SealedUpload`). An operation that cannot
    /// be sealed (no key) is refused alone.
    func uploadAssets(sealing operations: [RecordOperation], limits: ServerLimits) async throws -> PreparedOperations {
        var sealed = operations
        var refused: [Int: NimbusError] = [:]
        var seals: [SealedUpload.Place: SealedUpload] = [:]
        let declared = container.encryptedAssetFields
        for (index, operation) in operations.enumerated() {
            guard let record = operation.record else { continue }
            let fields = declared[record.recordType] ?? []
            guard !fields.isEmpty || record.fields.values.contains(where: { $0.isEncrypted || $0.hasEncryptedAsset }) else { continue }
            do {
                var ready = try container.seal(record)
                for (key, value) in ready.fields {
                    // An encrypted asset travels as an ASSETID whose bytes are sealed as they are sent;
                    // an encrypted list of assets as an ASSETID_LIST, each element sealed on its own.
                    guard let assets = value.encryptedAssets(declared: fields.contains(key)) else { continue }
                    let isList = if case .list = assets { true } else { false }
                    var element = 0
                    ready.fields[key] = try assets.mappingAssets { asset in
                        let (sent, upload) = try container.sealedForUpload(asset, of: record, field: key, limits: limits)
                        if let upload { seals[SealedUpload.Place(operation: index, field: key, element: isList ? element : nil)] = upload }
                        element += 1
                        return sent
                    }
                }
                sealed[index].record = ready
            } catch {
                refused[index] = error as? NimbusError ?? NimbusError(.encryptionKeyMissing, reason: "\(error)")
                sealed[index].record = nil  // nothing of a refused change is uploaded (its files are plaintext)
            }
        }
        var prepared = try await uploadAssets(of: sealed, limits: limits, seals: seals)
        for (index, error) in refused { prepared.refused[index] = error }
        return prepared
    }

    /// Downloads an encrypted asset of a record's field and opens it into the cache: the plaintext
    /// file (streamed, 64 KiB at a time). `decryptionFailed` when the bytes were changed, cut,
    /// reordered or moved from another record or field; `encryptionKeyMissing` without the key.
    /// The same as `downloadAsset` for a field that `encryptedAssetFields` declares (or any
    /// other field: its asset is opened as one bound to this record and field). `element` picks
    /// an asset of a list of assets (`ASSETID_LIST`): each is sealed on its own, bound to the
    /// record and field (not to its place in the list: docs/encryption.md).
    public func downloadDecryptedAsset(of record: Record, field: String, element: Int? = nil) async throws -> URL {
        var value = record.fields[field]
        if case .encrypted(let encrypted)? = value { value = encrypted.plaintext }
        if let element, case .list(let values, _)? = value { value = values.indices.contains(element) ? values[element] : nil }
        guard var asset = value?.assetValue else {
            let place = element.map { " at \($0)" } ?? ""
            throw NimbusError(.invalidArguments, reason: "\(record.recordType) \(record.recordName) has no asset in field \(field)\(place).")
        }
        // Cached per checksum and place: the same bytes moved to another record or field must not open there.
        asset.sealContext = container.sealContext(record, field: field)
        return try await downloadAsset(asset)
    }

    static func cacheName(_ checksum: String) -> String {
        checksum.replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "=", with: "")
    }
}
