import CCurl
import Foundation

/// One APNs request on its own libcurl easy handle: built from an `APNsRequest`, filled by libcurl's
/// callbacks on the driver thread, completed exactly once.
final class CurlTransfer: @unchecked Sendable {
    // @unchecked: built by the sending task, then handed to the driver thread once, under the driver's
    // inbox lock; from then on only the driver thread (libcurl's callbacks, `complete`) touches it.
    let handle: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var body: [UInt8] = []
    private var headers: [(name: String, value: String)] = []
    private var continuation: CheckedContinuation<APNsResponse, any Error>?

    /// APNs' error bodies are a few dozen bytes; more than this is not APNs and is cut off (curl error 23).
    private static let maxBodyBytes = 64 * 1024

    /// Sets up the easy handle; throws `.invalidRequest` when libcurl refuses an option.
    init(request: APNsRequest, url: String, bearer: String, configuration: APNsClient.Configuration) throws(APNsClientError) {
        guard let handle = curl_easy_init() else { throw .invalidRequest("curl_easy_init failed") }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(nimbus_CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(nimbus_CURL_ERROR_SIZE))
        let headerLines = [
            "authorization: bearer \(bearer)",
            "apns-topic: \(request.topic)",
            "apns-push-type: \(request.pushType.rawValue)",
            "apns-priority: \(request.priority.rawValue)",
            "apns-id: \(request.apnsID.uuidString.lowercased())",
            "apns-expiration: \(request.expiration)",
            "content-type: application/json",
            // No `Expect: 100-continue` wait, no `Accept: */*`.
            "Expect:",
            "Accept:",
        ] + (request.collapseID.map { ["apns-collapse-id: \($0)"] } ?? [])
        for line in headerLines {
            guard let list = curl_slist_append(headerList, line) else { throw .invalidRequest("curl_slist_append failed") }
            headerList = list
        }
        let unmanaged = Unmanaged.passUnretained(self).toOpaque()
        var failed: [String] = []
        func check(_ code: CURLcode, _ what: String) {
            if code != CURLE_OK { failed.append("\(what): \(Curl.message(code))") }
        }
        check(nimbus_curl_easy_setopt_string(handle, CURLOPT_URL, url), "URL")
        check(nimbus_curl_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "https"), "protocols")
        // HTTP/2 negotiated by ALPN in the TLS handshake; `complete` refuses an answer that came over
        // HTTP/1.1 (APNs speaks only HTTP/2).
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)), "HTTP version")
        // Wait for the host's one connection to say whether it multiplexes rather than opening another.
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_PIPEWAIT, 1), "pipewait")
        // No alarm() or SIGPIPE-handler juggling from a thread (libcurl's docs on CURLOPT_NOSIGNAL): Debian's
        // libcurl resolves names on a thread of its own and sends with MSG_NOSIGNAL; the server ignores SIGPIPE.
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1), "nosignal")
        // A dead peer is noticed within `deadPeerMilliseconds`: keepalive probes on an idle connection,
        // TCP_USER_TIMEOUT on unacknowledged data (a stream timeout alone leaves the connection in use).
        let deadPeerSeconds = max(1, configuration.deadPeerMilliseconds / 3000)
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1), "keepalive")
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_TCP_KEEPIDLE, deadPeerSeconds), "keepalive idle")
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_TCP_KEEPINTVL, deadPeerSeconds), "keepalive interval")
        check(nimbus_curl_easy_set_tcp_user_timeout(handle, UInt32(configuration.deadPeerMilliseconds)), "TCP user timeout")
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeoutMilliseconds), "connect timeout")
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, configuration.requestTimeoutMilliseconds), "timeout")
        if let caFile = configuration.caFile {
            // Replaces libcurl's CA bundle file; the system's CA directory (CAPATH, Debian's libcurl:
            // /etc/ssl/certs) stays, so public CAs are still trusted beside this one.
            check(nimbus_curl_easy_setopt_string(handle, CURLOPT_CAINFO, caFile), "CA file")
        }
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_POST, 1), "POST")
        check(nimbus_curl_easy_setopt_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.payload.count)), "body size")
        // COPYPOSTFIELDS copies the bytes, so nothing of ours must outlive this call.
        check(request.payload.withUnsafeBytes { bytes in
            // An empty payload still needs a valid pointer.
            let pointer = bytes.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) } ?? unmanaged
            return nimbus_curl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, pointer)
        }, "body")
        check(nimbus_curl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList), "headers")
        check(nimbus_curl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer), "error buffer")
        check(nimbus_curl_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION, { data, size, count, context in
            guard let data, let context else { return 0 }
            return Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue().received(body: data, count: size * count)
        }), "write callback")
        check(nimbus_curl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, unmanaged), "write data")
        check(nimbus_curl_easy_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION, { data, size, count, context in
            guard let data, let context else { return 0 }
            return Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue().received(header: data, count: size * count)
        }), "header callback")
        check(nimbus_curl_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, unmanaged), "header data")
        if !failed.isEmpty {
            throw .invalidRequest("libcurl refused options: " + failed.joined(separator: "; "))
        }
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    /// Set once, by `APNsClient.send`, before the transfer is handed to the driver.
    func attach(_ continuation: CheckedContinuation<APNsResponse, any Error>) {
        self.continuation = continuation
    }

    private func received(body data: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        guard body.count + count <= Self.maxBodyBytes else { return 0 }
        body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
        return count
    }

    /// One header line ("name: value\r\n"), or a status line that starts a new response.
    private func received(header data: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        let line = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            headers.removeAll()
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
            headers.append((name, value))
        }
        return count
    }

    /// libcurl finished the transfer with `code`: resume the sender with the answer or the failure.
    func complete(_ code: CURLcode) {
        guard code == CURLE_OK else {
            let detail = errorBuffer.pointee == 0 ? Curl.message(code) : String(cString: errorBuffer)
            finish(.failure(.connection(APNsConnectionFailure(kind: Curl.kind(of: code), code: Int(code.rawValue), detail: detail))))
            return
        }
        var status = 0
        var version = 0
        _ = nimbus_curl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        _ = nimbus_curl_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version)
        guard version == Int(CURL_HTTP_VERSION_2_0) else {
            finish(.failure(.connection(APNsConnectionFailure(
                kind: .tls, code: 0, detail: "the server answered without HTTP/2 (no ALPN h2 agreed); APNs speaks only HTTP/2"))))
            return
        }
        finish(.success(APNsResponse(status: status, headers: headers, body: body)))
    }

    /// Ends the transfer without an answer (the client is shutting down, or libcurl refused it).
    func finish(_ result: Result<APNsResponse, APNsClientError>) {
        guard let continuation else { return }
        self.continuation = nil
        continuation.resume(with: result.mapError { $0 as any Error })
    }
}
