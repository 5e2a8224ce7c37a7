import CCurl

/// Process-wide libcurl facts and set-up.
enum Curl {
    /// `curl_global_init`, once, before the first handle (Swift runs a static `let` initialiser once,
    /// thread-safely; libcurl ≥ 7.84 built "threadsafe", as Debian's is, allows it after other threads
    /// started). Its result: nil, or why libcurl is unusable here.
    static let initialisation: String? = {
        let code = curl_global_init(nimbus_CURL_GLOBAL_DEFAULT)
        guard code == CURLE_OK else { return "curl_global_init failed: \(message(code))" }
        guard let info = nimbus_curl_version_info() else { return "curl_version_info returned nothing" }
        let version = info.pointee.version.map { String(cString: $0) } ?? "unknown"
        // Debian's libcurl4 is built with nghttp2; a libcurl without it cannot speak to APNs.
        guard info.pointee.features & nimbus_CURL_VERSION_HTTP2 != 0 else {
            return "libcurl \(version) has no HTTP/2 support (APNs requires it); install Debian's libcurl4-openssl-dev (deploy/install-deps.sh)"
        }
        return nil
    }()

    /// The libcurl version and TLS backend, for the start-up log.
    static var versionDescription: String {
        guard let info = nimbus_curl_version_info() else { return "libcurl (unknown version)" }
        let version = info.pointee.version.map { String(cString: $0) } ?? "?"
        let tls = info.pointee.ssl_version.map { String(cString: $0) } ?? "no TLS"
        let nghttp2 = info.pointee.nghttp2_version.map { String(cString: $0) } ?? "no nghttp2"
        return "libcurl \(version), \(tls), nghttp2 \(nghttp2), CA file \(defaultCAFile ?? "none"), CA directory \(defaultCADirectory ?? "none")"
    }

    /// libcurl's built-in CA bundle file (Debian: /etc/ssl/certs/ca-certificates.crt); an extra CA replaces it.
    static var defaultCAFile: String? {
        nimbus_curl_version_info()?.pointee.cainfo.map { String(cString: $0) }
    }

    /// libcurl's built-in CA directory (Debian: /etc/ssl/certs), which stays trusted beside an extra CA file.
    static var defaultCADirectory: String? {
        nimbus_curl_version_info()?.pointee.capath.map { String(cString: $0) }
    }

    static func message(_ code: CURLcode) -> String {
        curl_easy_strerror(code).map { String(cString: $0) } ?? "curl error \(code.rawValue)"
    }

    static func message(_ code: CURLMcode) -> String {
        curl_multi_strerror(code).map { String(cString: $0) } ?? "curl multi error \(code.rawValue)"
    }

    /// Which kind of connection failure a transfer's `CURLcode` is.
    static func kind(of code: CURLcode) -> APNsConnectionFailure.Kind {
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            .couldNotConnect
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
             CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_SHUTDOWN_FAILED:
            .tls
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_PARTIAL_FILE,
             CURLE_WEIRD_SERVER_REPLY:
            .connectionLost
        case CURLE_OPERATION_TIMEDOUT:
            .timedOut
        default:
            .other
        }
    }
}
