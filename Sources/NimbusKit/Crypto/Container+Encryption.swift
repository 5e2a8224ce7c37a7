import Foundation

extension Container {
    /// Where this device keeps the account keys; nil (the default) until the app sets one. Without
    /// it, saving an encrypted value and reading one are `encryptionKeyMissing`.
    public var keyStore: (any KeyStore)? {
        get { keyStoreBox.withLock { $0.store } }
        set { keyStoreBox.withLock { $0.store = newValue; $0.ring = nil } }
    }

    /// The keys of the key store (an empty ring without one), read once and kept until
    /// `reloadKeys` (called after this container changes them, and when a key id is missing).
    func keyRing() throws -> KeyRing {
        if let ring = keyStoreBox.withLock({ $0.ring }) { return ring }
        guard let store = keyStore else { return KeyRing() }
        let ring = try store.load()
        keyStoreBox.withLock { $0.ring = ring }
        return ring
    }

    /// Forgets the kept key ring: the next use reads the key store again (another process, such
    /// as the app beside its extension, may have added a key).
    public func reloadKeys() { keyStoreBox.withLock { $0.ring = nil } }

    /// Seals the record's encrypted values that have no ciphertext yet with the newest key (assets
    /// and lists of assets are sealed at upload, file by file). A record sealed once keeps its bytes, so a retried create is identical.
    public func seal(_ record: Record) throws -> Record {
        var sealed = record
        var ring: KeyRing?
        for (key, value) in record.fields {
            guard case .encrypted(var encrypted) = value, encrypted.ciphertext == nil, let plaintext = encrypted.plaintext,
                  !plaintext.isAssets else { continue }
            if ring == nil { ring = try keyRing() }
            let context = sealContext(record, field: key)
            guard let newest = ring?.newest else { throw EncryptionError.keyMissing(context, keyID: nil).nimbusError }
            encrypted.ciphertext = try SealFormat.sealField(try FieldPlaintext.encode(plaintext), key: newest, context: context)
            sealed.fields[key] = .encrypted(encrypted)
        }
        return sealed
    }

    /// A change for the outbox: its encrypted values sealed now, so that every send of it (a retried
    /// create whose answer was lost) carries the same bytes and the server's idempotent create
    /// recognises it (CLIENT.md: the outbox keeps the ciphertext it first sent). The nonce stays
    /// random: a ciphertext is kept only as long as its plaintext is unchanged (`EncryptedValue`
    /// drops it when the plaintext is set). Without a key the change stays unsealed; the send
    /// refuses it with `encryptionKeyMissing`.
    func sealedForOutbox(_ change: PendingChange) -> PendingChange {
        guard case .save(let record) = change, record.fields.values.contains(where: {
            if case .encrypted(let value) = $0 { return value.ciphertext == nil && value.plaintext?.isAssets != true }
            return false
        }) else { return change }
        return (try? seal(record)).map(PendingChange.save) ?? change
    }

    /// Opens the record's sealed values with the device's keys: `encryptionKeyMissing` without the
    /// key, `decryptionFailed` (naming the field) when a value does not open. Never partial data.
    /// Assets of `encryptedAssetFields` are marked, so that downloading them opens them.
    public func open(_ record: Record) throws -> Record {
        try open(record, declared: encryptedAssetFields)
    }

    func open(_ record: Record, declared: [String: Set<String>]) throws -> Record {
        var opened = record
        var opener: FieldOpener?
        try open(&opened, declared: declared, opener: &opener)
        return opened
    }

    /// Opens the record where it is: a fetched page's records are opened without copying their
    /// fields, each sealed value replaced through the dictionary's values (no rehashing, its
    /// indices stay valid; the base fields are let go of first, so the dictionary is not shared
    /// while it changes). On a throw the record may be half opened; its id and type are unchanged.
    /// `opener` carries the key ring and what repeats between fields from one record of a page to
    /// the next (nil: made here when a record has a sealed field).
    func open(_ record: inout Record, declared: [String: Set<String>], opener: inout FieldOpener?) throws {
        if declared[record.recordType]?.isEmpty == false { record = markingEncryptedAssets(record, declared: declared) }
        // A fetched record's base fields share the fields' storage: let go of them while opening
        // (a record without sealed values gets them back unchanged).
        let hadBase = record.serverFields != nil
        record.serverFields = nil
        defer { if hadBase { record.serverFields = record.fields } }
        // The record's names, not the record: a copy of it would cost more than opening a field.
        let place = (zoneID: record.zoneID, type: record.recordType, name: record.recordName)
        var index = record.fields.startIndex
        while index != record.fields.endIndex {
            if case .encrypted(let encrypted) = record.fields.values[index], encrypted.plaintext == nil, let sealed = encrypted.ciphertext {
                if opener == nil { opener = FieldOpener(container: identifier, ring: try keyRing()) }
                let plaintext = try openField(sealed, zoneID: place.zoneID, recordType: place.type, recordName: place.name,
                                              field: record.fields.keys[index], opener: &opener)
                record.fields.values[index] = .encrypted(EncryptedValue(plaintext: plaintext, ciphertext: sealed))
            }
            record.fields.formIndex(after: &index)
        }
    }

    /// One sealed field's typed value. A key id the opener's ring lacks reads the key store again
    /// once (another process may have added the key) before it is `encryptionKeyMissing`.
    func openField(_ sealed: Data, zoneID: ZoneID, recordType: String, recordName: String, field: String,
                           opener: inout FieldOpener?) throws -> RecordValue {
        func context() -> SealContext {
            SealContext(container: identifier, zone: zoneID.zoneName, recordType: recordType, recordName: recordName, field: field)
        }
        func attempt() throws -> RecordValue? {
            try opener?.open(sealed, zone: zoneID.zoneName, recordType: recordType, recordName: recordName, field: field) { bytes in
                try FieldPlaintext.decode(bytes, context: context(), zoneID: zoneID)
            }
        }
        do {
            do {
                if let value = try attempt() { return value }
            } catch EncryptionError.keyMissing where keyStore != nil {
                reloadKeys()
                opener = FieldOpener(container: identifier, ring: try keyRing())
                if let value = try attempt() { return value }
            }
        } catch let error as EncryptionError {
            throw error.nimbusError
        }
        throw EncryptionError.keyMissing(context(), keyID: SealFormat.keyID(of: sealed)).nimbusError
    }

    func sealContext(_ record: Record, field: String) -> SealContext {
        SealContext(container: identifier, zone: record.zoneID.zoneName, recordType: record.recordType,
                    recordName: record.recordName, field: field)
    }

    // MARK: - Assets

    /// Seals an asset file for a record's field into a new file (64 KiB segments, streamed).
    public func sealAsset(_ file: URL, for record: Record, field: String) throws -> URL {
        guard let newest = try keyRing().newest else {
            throw EncryptionError.keyMissing(sealContext(record, field: field), keyID: nil).nimbusError
        }
        let sealed = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-sealed-\(UUID().uuidString)")
        let context = sealContext(record, field: field)
        try AssetSeal.seal(file, to: sealed, key: newest, context: context, salt: try AssetSeal.salt(for: file, key: newest, context: context))
        return sealed
    }

    /// Opens a sealed asset file of a record's field into `destination` (streamed; no file on failure).
    public func openAsset(_ sealed: URL, for record: Record, field: String, to destination: URL) throws {
        try AssetSeal.open(sealed, to: destination, keys: try keyRing(), context: sealContext(record, field: field))
    }

    // MARK: - Rotation

    /// Adds a new key version to the key store: new writes use it, older versions still open old
    /// data. Other devices learn it by pairing or a recovery phrase; `reencrypt(zone:)` moves a
    /// zone's records onto it.
    @discardableResult
    public func rotateKey() throws -> AccountKey {
        guard let store = keyStore else { throw EncryptionError.keyMissing(nil, keyID: nil).nimbusError }
        let ring = try store.loadOrCreate().rotated()
        try store.save(ring)
        reloadKeys()
        guard let newest = ring.newest else { throw EncryptionError.keyMissing(nil, keyID: nil).nimbusError }
        return newest
    }
}

/// A container's key store and the ring read from it.
struct KeySetup: Sendable {
    var store: (any KeyStore)?
    var ring: KeyRing?
    /// `Container.encryptedAssetFields`.
    var encryptedAssets: [String: Set<String>] = [:]
}

/// A field's plaintext bytes: the UTF-8 JSON of its wire form `{"type":"…","value":…}` with sorted
/// keys, so the declared type travels sealed with the value.
enum FieldPlaintext {
    static func encode(_ value: RecordValue) throws -> Data {
        try JSONSerialization.data(withJSONObject: value.wireField(), options: [.sortedKeys])
    }

    /// Read with the changes decoder's scanner (`RawField`), not `JSONSerialization`: this runs
    /// once per encrypted field of every fetched record.
    static func decode(_ bytes: Data, context: @autoclosure () -> SealContext, zoneID: ZoneID) throws -> RecordValue {
        try bytes.withUnsafeBytes { try decode($0, context: context(), zoneID: zoneID) }
    }

    /// The same from bytes that are not a `Data` (a page's plaintext buffer, `FieldOpener`).
    static func decode(_ bytes: UnsafeRawBufferPointer, context: @autoclosure () -> SealContext, zoneID: ZoneID) throws -> RecordValue {
        if let text = plainString(bytes.bindMemory(to: UInt8.self)) { return .string(text) }
        guard let value = (try? scan(bytes.bindMemory(to: UInt8.self), zoneID: zoneID)) ?? nil, !value.isEncrypted else {
            throw EncryptionError.decryptionFailed(context(), "the plaintext is not a typed value")
        }
        return value
    }

    private static let stringPrefix = Array(#"{"type":"STRING","value":""#.utf8)

    /// The string of `{"type":"STRING","value":"…"}` exactly as `encode` writes a string with
    /// nothing to escape (most sealed fields); nil for anything else, which `scan` reads, to the
    /// same value when it is one.
    private static func plainString(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        let prefix = stringPrefix.count
        guard bytes.count >= prefix + 2, bytes[bytes.count - 2] == UInt8(ascii: "\""), bytes[bytes.count - 1] == UInt8(ascii: "}"),
              let base = bytes.baseAddress, memcmp(base, stringPrefix, prefix) == 0 else { return nil }
        let text = UnsafeBufferPointer(rebasing: bytes[prefix ..< bytes.count - 2])
        for byte in text where byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
        return String(decoding: text, as: UTF8.self)
    }

    /// `{"type": …, "value": …}` and nothing after it; nil when it is not that.
    private static func scan(_ bytes: UnsafeBufferPointer<UInt8>, zoneID: ZoneID) throws -> RecordValue? {
        var s = JSONScanner(bytes)
        var field = RawField()
        try s.beginObject()
        var first = true
        while let key = try s.nextKey(&first) {
            if s.matches(key, "value") {
                field.value = s.index
                try s.skipValue()
            } else if s.matches(key, "type") {
                field.type = try s.stringValue()
            } else {
                try s.skipValue()
            }
        }
        guard s.atEnd() else { return nil }
        return try field.decode(&s, zoneID: zoneID)
    }
}
