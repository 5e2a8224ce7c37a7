import Foundation

/// Opens the sealed field values of a page of records (SealFormat, version 1) with what repeats
/// from one field to the next kept: the zone key of the last (key id, zone) as an `OpeningKey`
/// (with libcrypto: its context set up once and one plaintext buffer for the page), and the
/// associated data's fixed part (header, kind, container, zone, record type) in one buffer reused
/// for every field, so a field adds only its record and field names. The bytes are those of
/// `SealContext.associatedData` (`FieldOpenerTests` holds them equal); a `SealContext` is built only
/// to name a field that did not open.
struct FieldOpener {
    let container: String
    var ring: KeyRing
    private var zoneKey: (id: UInt32, zone: String, key: OpeningKey)?
    /// What `aad[..<fixedCount]` was built for.
    private var fixed: (id: UInt32, zone: String, recordType: String)?
    private var fixedCount = 0
    private var aad: [UInt8] = []

    init(container: String, ring: KeyRing) {
        self.container = container
        self.ring = ring
    }

    /// A sealed field's plaintext bytes: `keyMissing` when the ring lacks its key id,
    /// `decryptionFailed` when it is not this format or was changed or moved.
    mutating func open(_ sealed: Data, zone: String, recordType: String, recordName: String, field: String) throws -> Data {
        try open(sealed, zone: zone, recordType: recordType, recordName: recordName, field: field) { Data($0) }
    }

    /// Opens a sealed field and gives `body` its plaintext bytes, valid only inside `body` (with
    /// libcrypto they are the page's plaintext buffer): no `Data` is made for them. Errors as
    /// `open`; what `body` throws is thrown as it is.
    mutating func open<R>(_ sealed: Data, zone: String, recordType: String, recordName: String, field: String,
                          _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        func context() -> SealContext {
            SealContext(container: container, zone: zone, recordType: recordType, recordName: recordName, field: field)
        }
        return try sealed.withUnsafeBytes { raw in
            guard raw.count >= SealFormat.fieldOverhead, raw[0] == SealFormat.version else {
                throw EncryptionError.decryptionFailed(context(), "not a version-1 sealed value")
            }
            let id = UInt32(raw[1]) << 24 | UInt32(raw[2]) << 16 | UInt32(raw[3]) << 8 | UInt32(raw[4])
            let key: OpeningKey
            if let cached = zoneKey, cached.id == id, cached.zone == zone {
                key = cached.key
            } else {
                guard let account = ring.key(id: id) else { throw EncryptionError.keyMissing(context(), keyID: id) }
                key = try OpeningKey(SealFormat.zoneKey(account.bytes, container: container, zone: zone))
                zoneKey = (id, zone, key)
            }
            buildAssociatedData(id: id, zone: zone, recordType: recordType, recordName: recordName, field: field)
            // `01 | key id | nonce (12) | ciphertext | tag (16)`: views into the sealed bytes, no copies.
            let nonceEnd = 5 + Primitives.nonceSize, tagStart = raw.count - Primitives.tagSize
            let nonce = UnsafeRawBufferPointer(rebasing: raw[5 ..< nonceEnd])
            let ciphertext = UnsafeRawBufferPointer(rebasing: raw[nonceEnd ..< tagStart])
            let tag = UnsafeRawBufferPointer(rebasing: raw[tagStart...])
            return try aad.withUnsafeBytes { aad in
                do {
                    return try key.open(nonce: nonce, ciphertext: ciphertext, tag: tag, aad: aad, body)
                } catch is CryptoFailure {  // the cipher's refusal; what `body` throws passes as it is
                    throw EncryptionError.decryptionFailed(context(), "the ciphertext does not open with key \(id) for this record and field")
                }
            }
        }
    }

    /// `01 | key id | 'F' | lp(container) lp(zone) lp(type) lp(record) lp(field)` into `aad`.
    private mutating func buildAssociatedData(id: UInt32, zone: String, recordType: String, recordName: String, field: String) {
        if let fixed, fixed.id == id, fixed.zone == zone, fixed.recordType == recordType {
            aad.removeSubrange(fixedCount...)
        } else {
            aad.removeAll(keepingCapacity: true)
            aad.append(SealFormat.version)
            aad.append(contentsOf: [UInt8(id >> 24), UInt8((id >> 16) & 0xff), UInt8((id >> 8) & 0xff), UInt8(id & 0xff)])
            aad.append(UInt8(ascii: "F"))
            for name in [container, zone, recordType] { Self.appendLengthPrefixed(name, to: &aad) }
            fixed = (id, zone, recordType)
            fixedCount = aad.count
        }
        Self.appendLengthPrefixed(recordName, to: &aad)
        Self.appendLengthPrefixed(field, to: &aad)
    }

    /// A 2-byte big-endian length (at most 65,535) and as many bytes of the UTF-8, as `SealContext`.
    private static func appendLengthPrefixed(_ name: String, to bytes: inout [UInt8]) {
        var name = name
        name.withUTF8 { utf8 in
            let length = min(utf8.count, Int(UInt16.max))
            bytes.append(UInt8(length >> 8))
            bytes.append(UInt8(length & 0xff))
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8.prefix(length)))
        }
    }
}
