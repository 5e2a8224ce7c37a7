import Foundation

/// What the changes decoder needs to open a page's sealed values where it meets them
/// (`ChangesPageDecoder.decode(_:zone:opening:)`): the container's keys, and the opener that
/// keeps the zone key, its context and the associated data's fixed part from one field to the
/// next. One per page, used by one thread. Each value opens as `Container.open` opens it (the same
/// `openField`: a missing key id reads the key store again once), so the records and the
/// unreadable ones are those of `Container.openChanges` over the plainly decoded page.
final class PageOpening {
    let container: Container
    /// `Container.encryptedAssetFields`, read once for the page.
    let declared: [String: Set<String>]
    private var opener: FieldOpener?

    init(_ container: Container) {
        self.container = container
        declared = container.encryptedAssetFields
    }

    /// The opened value of a record's sealed field: its plaintext beside the sealed bytes (kept,
    /// so that saving the record unchanged sends the same bytes). Throws the `NimbusError`
    /// (`encryptionKeyMissing`, `decryptionFailed` naming the field) that makes the record unreadable.
    func open(_ sealed: Data, zoneID: ZoneID, recordType: String, recordName: String, field: String) throws -> RecordValue {
        if opener == nil { opener = FieldOpener(container: container.identifier, ring: try container.keyRing()) }
        let plaintext = try container.openField(sealed, zoneID: zoneID, recordType: recordType, recordName: recordName,
                                                field: field, opener: &opener)
        return .encrypted(EncryptedValue(plaintext: plaintext, ciphertext: sealed))
    }

    /// A readable record with the assets of its declared encrypted fields marked (as `Container.open` marks them).
    func finish(_ record: Record) -> Record {
        container.markingEncryptedAssets(record, declared: declared)
    }
}
