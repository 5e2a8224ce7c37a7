import Foundation

/// Opens the sealed field values of a page of records (SealFormat, version 1) with what repeats
/// from one field to the next kept: the zone key of the last (key id, zone), and the associated
/// data's fixed part (header, kind, container, zone, record type) in one buffer reused for every
/// field, so a field adds only its record and field names. The bytes are those of
/// `SealContext.associatedData` (`FieldOpenerTests` holds them equal); a `SealContext` is built only
/// to name a field that did not open.
struct FieldOpener {
    let container: String
    var ring: KeyRing
    private var zoneKey: (id: UInt32, zone: String, key: Data)?
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
        func context() -> SealContext {
            SealContext(container: container, zone: zone, recordType: recordType, recordName: recordName, field: field)
        }
        guard sealed.count >= SealFormat.fieldOverhead, let id = SealFormat.keyID(of: sealed) else {
            throw EncryptionError.decryptionFailed(context(), "not a version-1 sealed value")
        }
        let key: Data
        if let cached = zoneKey, cached.id == id, cached.zone == zone {
            key = cached.key
        } else {
            guard let account = ring.key(id: id) else { throw EncryptionError.keyMissing(context(), keyID: id) }
            key = SealFormat.zoneKey(account.bytes, container: container, zone: zone)
            zoneKey = (id, zone, key)
        }
        buildAssociatedData(id: id, zone: zone, recordType: recordType, recordName: recordName, field: field)
        let start = sealed.startIndex + 5
        let nonce = sealed[start ..< start + Primitives.nonceSize]  // slices: no copies
        let body = sealed.suffix(from: start + Primitives.nonceSize)
        do {
            return try Primitives.open(key: key, nonce: nonce, sealed: body, aad: aad)
        } catch {
            throw EncryptionError.decryptionFailed(context(), "the ciphertext does not open with key \(id) for this record and field")
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
