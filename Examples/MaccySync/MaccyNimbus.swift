import Foundation
import NimbusKit

/// The device's database: its server and token, and the account key that opens the encrypted
/// fields (`HistoryItem.title`, `HistoryItemContent.value` and the image assets).
enum MaccyNimbus {
    static let containerIdentifier = "iCloud.org.p0deje.Maccy"

    /// From `NIMBUS_URL` / `NIMBUS_TOKEN`, the key in `MACCY_KEY_FILE` (a `FileKeyStore`; the Mac
    /// makes it, another device gets it by pairing or a recovery phrase), the asset cache in the
    /// device's folder. An app on Apple platforms gets its token from pairing
    /// (`Container.enroll(pairingURL:…)`) and keeps the key in the Keychain (`KeychainKeyStore`).
    static func database(directory: URL, environment: [String: String] = ProcessInfo.processInfo.environment,
                         createKey: Bool) throws -> Database {
        guard var configuration = NimbusConfiguration.fromEnvironment(environment) else {
            throw NimbusError(.notAuthenticated, reason: "Set NIMBUS_URL and NIMBUS_TOKEN (a device token from `nimbus token issue`).")
        }
        configuration.assetCacheDirectory = directory.appendingPathComponent("cache", isDirectory: true)
        let container = Container(identifier: containerIdentifier, configuration: configuration)
        let keyFile = environment["MACCY_KEY_FILE"].map { URL(fileURLWithPath: $0) } ?? directory.appendingPathComponent("account.key")
        let keys = FileKeyStore(fileURL: keyFile)
        if createKey { _ = try keys.loadOrCreate() }
        container.keyStore = keys
        return container.privateDatabase
    }
}
