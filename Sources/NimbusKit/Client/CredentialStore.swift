import Foundation

/// A device's token for one server, as enrollment hands it out.
public struct DeviceCredential: Codable, Sendable, Hashable {
    public var serverURL: URL
    public var token: String
    public var tokenID: String
    public var userRecordName: String
    public var deviceName: String

    public init(serverURL: URL, token: String, tokenID: String, userRecordName: String, deviceName: String) {
        self.serverURL = serverURL
        self.token = token
        self.tokenID = tokenID
        self.userRecordName = userRecordName
        self.deviceName = deviceName
    }
}

/// Where a device keeps its token between launches. Apple apps pass one backed by the Keychain;
/// `FileCredentialStore` keeps it in a file only the user can read.
public protocol CredentialStore: Sendable {
    func save(_ credential: DeviceCredential) throws
    /// The credential for `serverURL`, or nil when this device has not enrolled there.
    func credential(for serverURL: URL) throws -> DeviceCredential?
    func remove(for serverURL: URL) throws
}

/// Credentials as JSON files (mode 0600) in a directory, one per server.
public struct FileCredentialStore: CredentialStore {
    public let directory: URL

    public init(directory: URL) {
        self.directory = directory
    }

    public func save(_ credential: DeviceCredential) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let file = self.file(for: credential.serverURL)
        let data = try JSONEncoder().encode(credential)
        guard FileManager.default.createFile(atPath: file.path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw NimbusError(.internalError, reason: "Cannot write the credential file \(file.path).")
        }
    }

    public func credential(for serverURL: URL) throws -> DeviceCredential? {
        let file = self.file(for: serverURL)
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        return try JSONDecoder().decode(DeviceCredential.self, from: Data(contentsOf: file))
    }

    public func remove(for serverURL: URL) throws {
        let file = self.file(for: serverURL)
        if FileManager.default.fileExists(atPath: file.path) { try FileManager.default.removeItem(at: file) }
    }

    private func file(for serverURL: URL) -> URL {
        var checksum = Checksum()
        checksum.update(Data(serverURL.absoluteString.utf8))
        // base64 of the URL's SHA-256, made file-name safe.
        let name = checksum.finalizeBase64().prefix(32).map { $0 == "/" ? "_" : $0 == "+" ? "-" : $0 }
        return directory.appendingPathComponent("nimbus-\(String(name)).json")
    }
}
