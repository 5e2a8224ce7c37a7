import Foundation
import NimbusKit

/// The device's container: its server and credential, and the account key that opens the encrypted
/// fields (`HistoryItem.title`, `HistoryItemContent.value` and the image assets).
enum MaccyNimbus {
    static let containerIdentifier = "iCloud.org.p0deje.Maccy"

    /// `NIMBUS_URL` with `NIMBUS_TOKEN` (a token from `nimbus token issue`), or the credential this
    /// device got by pairing (`enroll`); the key in `MACCY_KEY_FILE`, else the device folder's
    /// `account.key` (a `FileKeyStore`: the first Mac makes it, pairing hands it over); the asset
    /// cache in the device's folder. An app on Apple platforms keeps the credential and the key in
    /// the Keychain (`KeychainKeyStore`).
    static func container(directory: URL, environment: [String: String] = ProcessInfo.processInfo.environment,
                          createKey: Bool) throws -> Container {
        var configuration: NimbusConfiguration
        if let fromEnvironment = NimbusConfiguration.fromEnvironment(environment) {
            configuration = fromEnvironment
        } else if let server = environment["NIMBUS_URL"].flatMap(URL.init(string:)),
                  let credential = try credentials(directory).credential(for: server) {
            configuration = NimbusConfiguration(serverURL: credential.serverURL, token: credential.token)
        } else {
            throw NimbusError(.notAuthenticated, reason: "Set NIMBUS_URL and NIMBUS_TOKEN (a device token from `nimbus token issue`), "
                + "or enroll this device with a pairing URL from the Mac (`MaccySync iphone enroll URL`).")
        }
        configuration.assetCacheDirectory = directory.appendingPathComponent("cache", isDirectory: true)
        let container = Container(identifier: containerIdentifier, configuration: configuration)
        let keys = keyStore(directory, environment)
        if createKey { _ = try keys.loadOrCreate() }
        container.keyStore = keys
        return container
    }

    /// Enrolls this device with a pairing URL made on the Mac (`MaccySync mac pair`): its token is
    /// kept in the device's folder, the account keys of the URL's fragment in its key store.
    static func enroll(pairingURL: URL, deviceName: String, directory: URL,
                       environment: [String: String] = ProcessInfo.processInfo.environment) async throws {
        _ = try await Container.enroll(pairingURL: pairingURL, deviceName: deviceName, identifier: containerIdentifier,
                                       credentials: credentials(directory), keyStore: keyStore(directory, environment))
    }

    static func credentials(_ directory: URL) -> FileCredentialStore {
        FileCredentialStore(directory: directory.appendingPathComponent("credentials", isDirectory: true))
    }

    static func keyStore(_ directory: URL, _ environment: [String: String]) -> FileKeyStore {
        FileKeyStore(fileURL: environment["MACCY_KEY_FILE"].map { URL(fileURLWithPath: $0) } ?? directory.appendingPathComponent("account.key"))
    }
}
