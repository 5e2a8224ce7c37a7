import CCurl
import Foundation

/// One plain HTTP/1.1 POST on its own easy handle (`CurlPost`; the relay client's request): URL, header
/// lines and body in, status, headers and body out. `CurlTransfer` is the APNs one (HTTP/2, APNs' headers).
final class CurlExchange: CurlDriven, @unchecked Sendable {
    // @unchecked: built by the sending task, handed to the driver thread once under the driver's inbox
    // lock; from then on only the driver thread (libcurl's callbacks, `complete`, `fail`) touches it.
    struct Answer: Sendable {
        var status: Int
        var headers: [(name: String, value: String)]
        var body: [UInt8]
    }

    struct Options: Sendable {
        var caFile: String?
        var connectTimeoutMilliseconds: Int
        var requestTimeoutMilliseconds: Int
    }

    private let post: CurlPost
    private var continuation: CheckedContinuation<Answer, any Error>?

    var handle: UnsafeMutableRawPointer { post.handle }

    init(url: String, headerLines: [String], body: [UInt8], options: Options) throws(APNsClientError) {
        post = try CurlPost(CurlPost.Options(
            url: url, protocols: "http,https", httpVersion: Int(CURL_HTTP_VERSION_1_1), headerLines: headerLines, body: body,
            caFile: options.caFile, connectTimeoutMilliseconds: options.connectTimeoutMilliseconds,
            requestTimeoutMilliseconds: options.requestTimeoutMilliseconds))
    }

    /// Set once, before the exchange is handed to the driver.
    func attach(_ continuation: CheckedContinuation<Answer, any Error>) {
        self.continuation = continuation
    }

    func complete(_ code: CURLcode) {
        guard code == CURLE_OK else {
            fail(.connection(APNsConnectionFailure(kind: Curl.kind(of: code), code: Int(code.rawValue), detail: "relay: \(post.errorDetail(code))")))
            return
        }
        resume(.success(Answer(status: post.info(CURLINFO_RESPONSE_CODE), headers: post.headers, body: post.body)))
    }

    func fail(_ error: APNsClientError) {
        resume(.failure(error))
    }

    private func resume(_ result: Result<Answer, APNsClientError>) {
        guard let continuation else { return }
        self.continuation = nil
        continuation.resume(with: result.mapError { $0 as any Error })
    }
}
