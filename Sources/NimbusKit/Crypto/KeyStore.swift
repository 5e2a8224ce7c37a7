import Foundation
#if canImport(Security)
import Security
#endif

/// Where a device keeps the user's account keys: the Keychain on Apple platforms (an access group
/// the app's extensions share), a 0600 file on Linux, memory in tests. Others implement it too.
public protocol KeyStore: Sendable {
    /// The keys this device holds (an empty ring when it has none).
    func load() throws -> KeyRing
    func save(_ ring: KeyRing) throws
}

extension KeyStore {
    /// The ring, making key 1 when the store is empty (the first device of a user).
    public func loadOrCreate() throws -> KeyRing {
        let ring = try load()
        if !ring.isEmpty { return ring }
        let created = KeyRing([AccountKey.generate()])
        try save(created)
        return created
    }

    /// Adds keys received from another device (a pairing fragment, a recovery phrase).
    public func adopt(_ keys: KeyRing) throws {
        var ring = try load()
        for key in keys.keys { ring.add(key) }
        try save(ring)
    }
}

/// Keys in memory only (tests, and devices that must not keep them).
public final class MemoryKeyStore: KeyStore {
    private let ring: Locked<KeyRing>
    public init(_ ring: KeyRing = KeyRing()) { self.ring = Locked(ring) }
    public func load() throws -> KeyRing { ring.withLock { $0 } }
    public func save(_ ring: KeyRing) throws { self.ring.withLock { $0 = ring } }
}

/// Keys in a file only its owner may read (mode 0600): one `id:base64url` per line, or a single
/// base64url key (key 1) as `NIMBUS_KEY_FILE` holds it.
public struct FileKeyStore: KeyStore {
    public let fileURL: URL
    public init(fileURL: URL) { self.fileURL = fileURL }

    public func load() throws -> KeyRing {
        guard FileManager.default.fileExists(atPath: fileURL.path) else { return KeyRing() }
        let text: String
        do { text = try String(contentsOf: fileURL, encoding: .utf8) } catch {
            throw NimbusError(.encryptionKeyMissing, reason: "The key file \(fileURL.path) cannot be read: \(error.localizedDescription)")
        }
        do { return try KeyRing(text: text) } catch let error as NimbusError {
            throw NimbusError(.encryptionKeyMissing, reason: "The key file \(fileURL.path) is not a key: \(error.reason)")
        }
    }

    public func save(_ ring: KeyRing) throws {
        let directory = fileURL.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Written beside with 0600 from the start, then renamed over: never readable by others, never half-written.
        let temporary = directory.appendingPathComponent(".\(fileURL.lastPathComponent).\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: Data(ring.text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw NimbusError(.invalidArguments, reason: "Cannot write the key file beside \(fileURL.path).")
        }
        _ = try? FileManager.default.removeItem(at: fileURL)
        try FileManager.default.moveItem(at: temporary, to: fileURL)
    }
}

#if canImport(Security) && !os(Linux)
/// Keys in the Keychain, in an access group the app and its extensions (the notification service
/// extension opens sealed alerts) share; readable after the first unlock.
public struct KeychainKeyStore: KeyStore {
    public let service: String
    public let accessGroup: String?

    public init(service: String = "nimbus.account-keys", accessGroup: String? = nil) {
        self.service = service
        self.accessGroup = accessGroup
    }

    private var query: [String: Any] {
        var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                                    kSecAttrAccount as String: "ring"]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }

    public func load() throws -> KeyRing {
        var lookup = query
        lookup[kSecReturnData as String] = true
        var item: CFTypeRef?
        let status = SecItemCopyMatching(lookup as CFDictionary, &item)
        if status == errSecItemNotFound { return KeyRing() }
        guard status == errSecSuccess, let data = item as? Data, let text = String(data: data, encoding: .utf8) else {
            throw NimbusError(.encryptionKeyMissing, reason: "The Keychain refused the account keys (OSStatus \(status)).")
        }
        return try KeyRing(text: text)
    }

    public func save(_ ring: KeyRing) throws {
        let data = Data(ring.text.utf8)
        let update: [String: Any] = [kSecValueData as String: data]
        var status = SecItemUpdate(query as CFDictionary, update as CFDictionary)
        if status == errSecItemNotFound {
            var add = query
            add[kSecValueData as String] = data
            add[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            status = SecItemAdd(add as CFDictionary, nil)
        }
        guard status == errSecSuccess else {
            throw NimbusError(.invalidArguments, reason: "The Keychain did not keep the account keys (OSStatus \(status)).")
        }
    }
}
#endif
