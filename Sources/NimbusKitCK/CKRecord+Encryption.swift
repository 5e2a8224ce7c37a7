import Foundation

extension CKRecord {
    /// CloudKit's `encryptedValues`: fields set here are sealed on the device before they are saved
    /// (`ENCRYPTED_BYTES` on the server) and read back as plaintext. Keys: `NimbusCK.keyStore`.
    public var encryptedValues: CKEncryptedValues { CKEncryptedValues(record: self) }
}

/// The encrypted fields of a `CKRecord` (CloudKit's `CKRecordKeyValueSetting` of `encryptedValues`).
public struct CKEncryptedValues: Sendable {
    let record: CKRecord

    public subscript(key: String) -> CKRecordValue? {
        get { record.storage.withLock { $0.encryptedValues[key] }.flatMap { CKRecord.ckValue($0, database: record.database) } }
        nonmutating set { record.storage.withLock { $0.encryptedValues[key] = newValue.flatMap(CKRecord.recordValue) } }
    }

    public func object(forKey key: String) -> CKRecordValue? { self[key] }
    public func setObject(_ object: CKRecordValue?, forKey key: String) { self[key] = object }
    public func allKeys() -> [String] { record.storage.withLock { $0.fields.filter { $0.value.isEncrypted }.keys.sorted() } }
}

extension NimbusCK {
    private static let keys = Locked<(store: (any KeyStore)?, set: Bool)>((nil, false))

    /// Sets where every `CKContainer` created afterwards keeps the account keys. Without it,
    /// `NIMBUS_KEY_FILE` names a file holding the key (32 bytes, base64url), created with a fresh
    /// key when missing; on Apple platforms without either, the Keychain.
    public static func configure(keyStore: (any KeyStore)?) {
        keys.withLock { $0 = (keyStore, true) }
    }

    static var keyStore: (any KeyStore)? {
        if let configured = keys.withLock({ $0.set ? Optional($0.store) : nil }) { return configured }
        return keyStore(environment: ProcessInfo.processInfo.environment)
    }

    /// The key store `NIMBUS_KEY_FILE` names (its file created with a fresh key when missing).
    static func keyStore(environment: [String: String]) -> (any KeyStore)? {
        if let path = environment["NIMBUS_KEY_FILE"], !path.isEmpty {
            let url = URL(fileURLWithPath: path)
            if !FileManager.default.fileExists(atPath: path) {
                let key = AccountKey.generate()
                try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                FileManager.default.createFile(atPath: path, contents: Data((key.base64URL + "\n").utf8), attributes: [.posixPermissions: 0o600])
            }
            return FileKeyStore(fileURL: url)
        }
#if canImport(Security) && !os(Linux)
        return KeychainKeyStore()
#else
        return nil
#endif
    }
}
