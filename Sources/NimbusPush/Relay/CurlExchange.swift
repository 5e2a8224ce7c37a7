import CCurl
import Foundation

/// One plain HTTP/1.1 POST on its own easy handle (the relay client's request): URL, header lines and
/// body in, status, headers and body out. `CurlTransfer` is the APNs one (HTTP/2, APNs' headers).
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

    let handle: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var body: [UInt8] = []
    private var headers: [(name: String, value: String)] = []
    private var continuation: CheckedContinuation<Answer, any Error>?

    /// The relay's answers are small JSON objects; more than this is not the relay.
    private static let maxBodyBytes = 64 * 1024

    init(url: String, headerLines: [String], body requestBody: [UInt8], options: Options) throws(APNsClientError) {
        guard let handle = curl_easy_init() else { throw .invalidRequest("curl_easy_init failed") }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(nimbus_CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(nimbus_CURL_ERROR_SIZE))
        for line in headerLines + ["Expect:", "Accept:"] {
            guard let list = curl_slist_append(headerList, line) else { throw .invalidRequest("curl_slist_append failed") }
            headerList = list
        }
        let unmanaged = Unmanaged.passUnretained(self).toOpaque()
        var failed: [String] = []
        func check(_ code: CURLcode, _ what: String) {
            if code != CURLE_OK { failed.append("\(what): \(Curl.message(code))") }
        }
        check(nimbus_curl_easy_setopt_string(handle, CURLOPT_URL, url), "URL")
        check(nimbus_curl_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"), "protocols")
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1)), "HTTP version")
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1), "nosignal")
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1), "keepalive")
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeoutMilliseconds), "connect timeout")
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, options.requestTimeoutMilliseconds), "timeout")
        if let caFile = options.caFile {
            check(nimbus_curl_easy_setopt_string(handle, CURLOPT_CAINFO, caFile), "CA file")
        }
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_POST, 1), "POST")
        check(nimbus_curl_easy_setopt_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(requestBody.count)), "body size")
        // COPYPOSTFIELDS copies the bytes, so nothing of ours must outlive this call.
        check(requestBody.withUnsafeBytes { bytes in
            let pointer = bytes.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) } ?? unmanaged
            return nimbus_curl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, pointer)
        }, "body")
        check(nimbus_curl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList), "headers")
        check(nimbus_curl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer), "error buffer")
        check(nimbus_curl_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION, { data, size, count, context in
            guard let data, let context else { return 0 }
            return Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().received(body: data, count: size * count)
        }), "write callback")
        check(nimbus_curl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, unmanaged), "write data")
        check(nimbus_curl_easy_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION, { data, size, count, context in
            guard let data, let context else { return 0 }
            return Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().received(header: data, count: size * count)
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

    /// Set once, before the exchange is handed to the driver.
    func attach(_ continuation: CheckedContinuation<Answer, any Error>) {
        self.continuation = continuation
    }

    private func received(body data: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        guard body.count + count <= Self.maxBodyBytes else { return 0 }
        body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
        return count
    }

    private func received(header data: UnsafeMutablePointer<CChar>, count: Int) -> Int {
        let line = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            headers.removeAll()
        } else if let colon = line.firstIndex(of: ":") {
            headers.append((line[..<colon].trimmingCharacters(in: .whitespaces),
                            line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        return count
    }

    func complete(_ code: CURLcode) {
        guard code == CURLE_OK else {
            let detail = errorBuffer.pointee == 0 ? Curl.message(code) : String(cString: errorBuffer)
            fail(.connection(APNsConnectionFailure(kind: Curl.kind(of: code), code: Int(code.rawValue), detail: "relay: \(detail)")))
            return
        }
        var status = 0
        _ = nimbus_curl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        resume(.success(Answer(status: status, headers: headers, body: body)))
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
