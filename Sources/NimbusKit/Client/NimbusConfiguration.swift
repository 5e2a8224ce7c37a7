import Foundation

/// Where the server is and who this device is.
public struct NimbusConfiguration: Sendable, Hashable {
    /// The server's base URL, e.g. `http://127.0.0.1:8080`.
    public var serverURL: URL
    /// This device's bearer token.
    public var token: String
    public var environment: Environment
    /// Time allowed for an ordinary request; waiting requests get their wait on top.
    public var requestTimeout: TimeInterval
    /// Where downloaded assets are cached (default: a `NimbusAssets` folder in the caches directory).
    public var assetCacheDirectory: URL?

    public enum Environment: String, Sendable, Hashable, Codable {
        case development, production
    }

    public init(serverURL: URL, token: String, environment: Environment = .development,
                requestTimeout: TimeInterval = 60, assetCacheDirectory: URL? = nil) {
        self.serverURL = serverURL
        self.token = token
        self.environment = environment
        self.requestTimeout = requestTimeout
        self.assetCacheDirectory = assetCacheDirectory
    }

    /// From `NIMBUS_URL`, `NIMBUS_TOKEN` and `NIMBUS_ENVIRONMENT` (default `development`);
    /// `nil` when the URL or token is missing or the environment is not one of the two.
    public static func fromEnvironment(_ variables: [String: String] = ProcessInfo.processInfo.environment)
        -> NimbusConfiguration? {
        guard let urlText = variables["NIMBUS_URL"], let url = URL(string: urlText), url.scheme != nil,
              let token = variables["NIMBUS_TOKEN"], !token.isEmpty else { return nil }
        let environmentName = variables["NIMBUS_ENVIRONMENT"] ?? Environment.development.rawValue
        guard let environment = Environment(rawValue: environmentName) else { return nil }
        return NimbusConfiguration(serverURL: url, token: token, environment: environment)
    }
}
