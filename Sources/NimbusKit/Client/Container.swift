import Foundation

/// One app's container on one Nimbus server, for one device: the entry point of NimbusKit.
///
///     let container = Container(identifier: "iCloud.com.example.App",
///                               configuration: NimbusConfiguration(serverURL: url, token: token))
///     let saved = try await container.privateDatabase.save(record)
public final class Container: Sendable {
    public let identifier: String
    public let configuration: NimbusConfiguration
    let transport: Transport
    private let cachedLimits = Locked<ServerLimits?>(nil)
    let assetCache: AssetCache
    /// Where the account keys of end-to-end encryption are (Container+Encryption.swift).
    let keyStoreBox = Locked<KeySetup>(KeySetup())

    public convenience init(identifier: String, configuration: NimbusConfiguration) {
        self.init(identifier: identifier, configuration: configuration, transport: Transport(configuration: configuration))
    }

    /// A container whose requests go through `transport` (tests: an in-process transport, no server).
    init(identifier: String, configuration: NimbusConfiguration, transport: Transport) {
        self.identifier = identifier
        self.configuration = configuration
        self.transport = transport
        assetCache = AssetCache(directory: configuration.assetCacheDirectory ?? AssetCache.defaultDirectory())
    }

    /// A container configured from `NIMBUS_URL`, `NIMBUS_TOKEN` and `NIMBUS_ENVIRONMENT`.
    public convenience init(identifier: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let configuration = NimbusConfiguration.fromEnvironment(environment) else {
            throw NimbusError(.notAuthenticated, reason: "Set NIMBUS_URL (e.g. http://127.0.0.1:8080) and NIMBUS_TOKEN "
                + "(a device token from `nimbus token issue`); NIMBUS_ENVIRONMENT is development or production.")
        }
        self.init(identifier: identifier, configuration: configuration)
    }

    /// Gives this container (and every database, engine and channel made from it) a new device
    /// token, e.g. after the old one was revoked (`notAuthenticated`) and the device paired again.
    /// Requests started from now on carry it; `configuration.token` keeps the first one.
    public func replaceCredential(_ token: String) { transport.replaceToken(token) }

    /// The user's private database.
    public var privateDatabase: Database { Database(container: self) }

    /// The user this device's token belongs to (`users/current`).
    public func currentUserRecordName() async throws -> String {
        let answer = try await transport.get(privateDatabase.url("users/current"))
        guard let name = JSON.string(answer["userRecordName"]) else { throw JSON.bad("users/current has no userRecordName") }
        return name
    }

    /// The server's limits (`GET /limits`), read once and kept.
    public func limits() async throws -> ServerLimits {
        if let limits = cachedLimits.withLock({ $0 }) { return limits }
        let answer = try await transport.get(transport.url("/limits"), authorized: false)
        let limits = ServerLimits(answer)
        cachedLimits.withLock { $0 = limits }
        return limits
    }
}

/// The limits a server announces at `GET /limits` that shape client requests.
public struct ServerLimits: Sendable, Hashable {
    public var maxOperationsPerRequest: Int
    public var maxRecordBytes: Int
    public var maxRequestBytes: Int
    public var maxResultsLimit: Int
    public var maxWaitSeconds: Int
    public var maxAssetBytes: Int64
    public var maxAssetTokensPerRequest: Int

    /// The defaults of docs/api.md, used for any key the server does not announce.
    public static let defaults = ServerLimits(JSONObject())

    init(_ object: JSONObject) {
        func int(_ key: String, _ fallback: Int) -> Int { JSON.int64(object[key]).map { Int(clamping: $0) } ?? fallback }
        maxOperationsPerRequest = max(1, int("maxOperationsPerRequest", 400))
        maxRecordBytes = int("maxRecordBytes", 1 << 20)
        maxRequestBytes = max(4096, int("maxRequestBytes", 8 << 20))
        maxResultsLimit = max(1, int("maxResultsLimit", 400))
        maxWaitSeconds = int("maxWaitSeconds", 55)
        maxAssetBytes = Int64(int("maxAssetBytes", 50 << 20))
        maxAssetTokensPerRequest = max(1, int("maxAssetTokensPerRequest", 200))
    }
}
