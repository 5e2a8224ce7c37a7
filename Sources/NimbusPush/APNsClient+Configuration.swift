import Foundation

extension APNsClient {
    /// Where and how the client connects. The operator's `--apns-url` and `--apns-ca-file` land here.
    package struct Configuration: Sendable, Equatable {
        package static let productionURL = "https://api.push.apple.com"
        package static let sandboxURL = "https://api.sandbox.push.apple.com"

        /// One base URL for both environments (`https://host[:port]`, no path), for tests and private
        /// gateways; nil: Apple's host for each request's environment.
        package var baseURL: String?
        /// A PEM file of CA certificates trusted beside the system's: libcurl's CA *file* becomes this
        /// one, and its CA *directory* (Debian: /etc/ssl/certs, hashed) still holds the system's CAs.
        /// On a system whose libcurl has no CA directory, only this file is trusted.
        package var caFile: String?
        package var connectTimeoutMilliseconds: Int
        package var requestTimeoutMilliseconds: Int
        /// An upper bound on streams per connection; APNs' own SETTINGS limit (about 1,000) applies too.
        package var maxConcurrentStreams: Int
        /// How long a connection may go without its peer acknowledging anything (keepalive probes when
        /// idle, TCP_USER_TIMEOUT with data in flight) before the kernel drops it and libcurl reconnects.
        package var deadPeerMilliseconds: Int

        package init(baseURL: String? = nil, caFile: String? = nil, connectTimeoutMilliseconds: Int = 10_000,
                     requestTimeoutMilliseconds: Int = 30_000, maxConcurrentStreams: Int = 1000, deadPeerMilliseconds: Int = 30_000) {
            self.baseURL = baseURL
            self.caFile = caFile
            self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
            self.requestTimeoutMilliseconds = requestTimeoutMilliseconds
            self.maxConcurrentStreams = maxConcurrentStreams
            self.deadPeerMilliseconds = deadPeerMilliseconds
        }

        /// The base URL requests for `environment` go to, without a trailing slash.
        package func baseURL(for environment: APNsEnvironment) -> String {
            if let baseURL { return baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL }
            switch environment {
            case .development: return Self.sandboxURL
            case .production: return Self.productionURL
            }
        }

        /// Why this configuration cannot work, naming the setting, or nil.
        package var problem: String? {
            if let baseURL {
                if let reason = Self.baseURLProblem(baseURL) { return reason }
            }
            if let caFile {
                guard FileManager.default.isReadableFile(atPath: caFile) else {
                    return "the APNs CA file \(caFile) cannot be read (--apns-ca-file)"
                }
            }
            guard connectTimeoutMilliseconds > 0, requestTimeoutMilliseconds > 0, (1000...3_600_000).contains(deadPeerMilliseconds) else {
                return "the APNs timeouts must be positive (the dead-peer timeout between 1 s and 1 h)"
            }
            guard (1...10_000).contains(maxConcurrentStreams) else {
                return "the APNs stream limit must be between 1 and 10000"
            }
            return nil
        }

        /// Why `text` is not `https://host[:port]`, or nil.
        package static func baseURLProblem(_ text: String) -> String? {
            guard let components = URLComponents(string: text), components.scheme == "https",
                  let host = components.host, !host.isEmpty else {
                return "the APNs URL '\(text)' is not https://HOST[:PORT] (--apns-url; APNs needs HTTP/2 over TLS)"
            }
            guard components.path.isEmpty || components.path == "/", components.query == nil, components.fragment == nil,
                  components.user == nil, components.password == nil else {
                return "the APNs URL '\(text)' has a path, query or credentials; give only scheme, host and port (--apns-url)"
            }
            return nil
        }
    }
}
