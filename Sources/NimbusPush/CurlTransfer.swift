import CCurl
import Foundation

/// One APNs request on its own libcurl easy handle (`CurlPost`): built from an `APNsRequest`, filled
/// by libcurl's callbacks on the driver thread, completed exactly once.
final class CurlTransfer: @unchecked Sendable {
    // @unchecked: built by the sending task, then handed to the driver thread once, under the driver's
    // inbox lock; from then on only the driver thread (libcurl's callbacks, `complete`) touches it.
    private let post: CurlPost
    private var continuation: CheckedContinuation<APNsResponse, any Error>?

    var handle: UnsafeMutableRawPointer { post.handle }

    /// Sets up the easy handle; throws `.invalidRequest` when libcurl refuses an option.
    init(request: APNsRequest, url: String, bearer: String, configuration: APNsClient.Configuration) throws(APNsClientError) {
        let headerLines = [
            "authorization: bearer \(bearer)",
            "apns-topic: \(request.topic)",
            "apns-push-type: \(request.pushType.rawValue)",
            "apns-priority: \(request.priority.rawValue)",
            "apns-id: \(request.apnsID.uuidString.lowercased())",
            "apns-expiration: \(request.expiration)",
            "content-type: application/json",
        ] + (request.collapseID.map { ["apns-collapse-id: \($0)"] } ?? [])
        // A dead peer is noticed within `deadPeerMilliseconds`: keepalive probes on an idle connection,
        // TCP_USER_TIMEOUT on unacknowledged data (a stream timeout alone leaves the connection in use).
        let deadPeerSeconds = max(1, configuration.deadPeerMilliseconds / 3000)
        post = try CurlPost(CurlPost.Options(
            url: url, protocols: "https",
            // HTTP/2 negotiated by ALPN in the TLS handshake; `complete` refuses an answer that came over
            // HTTP/1.1 (APNs speaks only HTTP/2).
            httpVersion: Int(CURL_HTTP_VERSION_2TLS),
            headerLines: headerLines, body: request.payload, caFile: configuration.caFile,
            connectTimeoutMilliseconds: configuration.connectTimeoutMilliseconds,
            requestTimeoutMilliseconds: configuration.requestTimeoutMilliseconds,
            more: [
                // Wait for the host's one connection to say whether it multiplexes rather than opening another.
                (CURLOPT_PIPEWAIT, 1, "pipewait"),
                (CURLOPT_TCP_KEEPIDLE, deadPeerSeconds, "keepalive idle"),
                (CURLOPT_TCP_KEEPINTVL, deadPeerSeconds, "keepalive interval"),
            ],
            tcpUserTimeoutMilliseconds: UInt32(configuration.deadPeerMilliseconds)))
    }

    /// Set once, by `APNsClient.send`, before the transfer is handed to the driver.
    func attach(_ continuation: CheckedContinuation<APNsResponse, any Error>) {
        self.continuation = continuation
    }

    /// libcurl finished the transfer with `code`: resume the sender with the answer or the failure.
    func complete(_ code: CURLcode) {
        guard code == CURLE_OK else {
            finish(.failure(.connection(APNsConnectionFailure(kind: Curl.kind(of: code), code: Int(code.rawValue),
                                                              detail: post.errorDetail(code)))))
            return
        }
        guard post.info(CURLINFO_HTTP_VERSION) == Int(CURL_HTTP_VERSION_2_0) else {
            finish(.failure(.connection(APNsConnectionFailure(
                kind: .tls, code: 0, detail: "the server answered without HTTP/2 (no ALPN h2 agreed); APNs speaks only HTTP/2"))))
            return
        }
        finish(.success(APNsResponse(status: post.info(CURLINFO_RESPONSE_CODE), headers: post.headers, body: post.body)))
    }

    /// Ends the transfer without an answer (the client is shutting down, or libcurl refused it).
    func finish(_ result: Result<APNsResponse, APNsClientError>) {
        guard let continuation else { return }
        self.continuation = nil
        continuation.resume(with: result.mapError { $0 as any Error })
    }
}
