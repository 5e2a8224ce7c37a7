import Foundation

/// A field value stored end-to-end encrypted: the plaintext the app reads and writes, and the
/// sealed bytes the server stores (`ENCRYPTED_BYTES`). A value set by the app has no ciphertext
/// until it is sealed (by a save, or `Container.seal`); a value fetched from the server has its
/// plaintext once the record was opened with the device's keys. Two values are equal when their
/// plaintexts are (or, without both plaintexts, their ciphertexts).
public struct EncryptedValue: Sendable, Codable, Hashable {
    public var plaintext: RecordValue? {
        didSet { if oldValue != plaintext { ciphertext = nil } }
    }
    /// The sealed bytes as the server has them (kept, so a retried create carries the same bytes).
    public internal(set) var ciphertext: Data?

    public init(_ plaintext: RecordValue) { self.plaintext = plaintext }

    init(sealed: Data) { ciphertext = sealed }

    init(plaintext: RecordValue?, ciphertext: Data?) {
        self.plaintext = plaintext
        self.ciphertext = ciphertext
    }

    public static func == (a: EncryptedValue, b: EncryptedValue) -> Bool {
        if let x = a.plaintext, let y = b.plaintext { return Record.sameValue(x, y) }
        return a.ciphertext == b.ciphertext && a.plaintext == nil && b.plaintext == nil
    }

    // Equal values may differ in which half they carry: one hash for all keeps `==` and `hash` agreed.
    public func hash(into hasher: inout Hasher) { hasher.combine(0xE2E) }
}

extension RecordValue {
    /// The plaintext of an encrypted value; the value itself otherwise.
    public var decrypted: RecordValue? {
        if case .encrypted(let v) = self { return v.plaintext }
        return self
    }
    public var isEncrypted: Bool { if case .encrypted = self { return true } else { return false } }
}

extension Record {
    /// The record's encrypted fields by plaintext, as CloudKit's `encryptedValues`: setting one
    /// stores it encrypted (sealed when saved), reading one gives the plaintext.
    public var encryptedValues: EncryptedValues {
        get { EncryptedValues(record: self) }
        set { self = newValue.record }
    }

    /// A view of a record's encrypted fields.
    public struct EncryptedValues: Sendable {
        var record: Record

        public subscript(key: String) -> RecordValue? {
            get {
                // An asset (or list of assets) of a declared encrypted field (`Container.encryptedAssetFields`) is one too.
                if let value = record.fields[key], value.isAssets, value.hasEncryptedAsset { return value }
                return record.fields[key]?.decrypted.flatMap { record.fields[key]?.isEncrypted == true ? $0 : nil }
            }
            set {
                if case .encrypted(var existing)? = record.fields[key], let newValue {
                    existing.plaintext = newValue
                    record.fields[key] = .encrypted(existing)
                } else {
                    record.fields[key] = newValue.map { .encrypted(EncryptedValue($0)) }
                }
            }
        }
    }
}
