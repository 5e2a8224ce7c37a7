import CCurl
import Foundation

/// One POST on its own libcurl easy handle, the part `CurlTransfer` (APNs, HTTP/2) and `CurlExchange`
/// (the relay, HTTP/1.1) share: the options both set, and the answer's headers and body collected by
/// libcurl's callbacks on the driver thread.
final class CurlPost: @unchecked Sendable {
    // @unchecked: built by the sending task, then handed to the driver thread once, under the driver's
    // inbox lock; from then on only the driver thread (libcurl's callbacks, the owner's `complete`) touches it.
    /// What the two requests set differently.
    struct Options {
        var url: String
        /// CURLOPT_PROTOCOLS_STR: "https" for APNs, "http,https" for a relay.
        var protocols: String
        /// CURLOPT_HTTP_VERSION.
        var httpVersion: Int
        var headerLines: [String]
        var body: [UInt8]
        /// Replaces libcurl's CA bundle file; the system's CA directory stays.
        var caFile: String?
        var connectTimeoutMilliseconds: Int
        var requestTimeoutMilliseconds: Int
        /// More CURLOPT_* long options, each with what it is for the error message.
        var more: [(option: CURLoption, value: Int, what: String)] = []
        /// TCP_USER_TIMEOUT on the connection (nil: the kernel's default).
        var tcpUserTimeoutMilliseconds: UInt32?
    }

    let handle: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    /// The answer's body (at most `maxBodyBytes`) and header lines, filled by libcurl's callbacks.
    private(set) var body: [UInt8] = []
    private(set) var headers: [(name: String, value: String)] = []

    /// APNs' and the relay's answers are small JSON objects; more than this is cut off (curl error 23).
    private static let maxBodyBytes = 64 * 1024

    /// Sets up the easy handle; throws `.invalidRequest` when libcurl refuses an option.
    init(_ options: Options) throws(APNsClientError) {
        guard let handle = curl_easy_init() else { throw .invalidRequest("curl_easy_init failed") }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(nimbus_CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(nimbus_CURL_ERROR_SIZE))
        // No `Expect: 100-continue` wait, no `Accept: */*`.
        for line in options.headerLines + ["Expect:", "Accept:"] {
            guard let list = curl_slist_append(headerList, line) else { throw .invalidRequest("curl_slist_append failed") }
            headerList = list
        }
        let unmanaged = Unmanaged.passUnretained(self).toOpaque()
        var failed: [String] = []
        func check(_ code: CURLcode, _ what: String) {
            if code != CURLE_OK { failed.append("\(what): \(Curl.message(code))") }
        }
        check(nimbus_curl_easy_setopt_string(handle, CURLOPT_URL, options.url), "URL")
        check(nimbus_curl_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, options.protocols), "protocols")
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, options.httpVersion), "HTTP version")
        // No alarm() or SIGPIPE-handler juggling from a thread (libcurl's docs on CURLOPT_NOSIGNAL): Debian's
        // libcurl resolves names on a thread of its own and sends with MSG_NOSIGNAL; the server ignores SIGPIPE.
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1), "nosignal")
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1), "keepalive")
        for more in options.more {
            check(nimbus_curl_easy_setopt_long(handle, more.option, more.value), more.what)
        }
        if let milliseconds = options.tcpUserTimeoutMilliseconds {
            check(nimbus_curl_easy_set_tcp_user_timeout(handle, milliseconds), "TCP user timeout")
        }
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeoutMilliseconds), "connect timeout")
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, options.requestTimeoutMilliseconds), "timeout")
        if let caFile = options.caFile {
            check(nimbus_curl_easy_setopt_string(handle, CURLOPT_CAINFO, caFile), "CA file")
        }
        check(nimbus_curl_easy_setopt_long(handle, CURLOPT_POST, 1), "POST")
        check(nimbus_curl_easy_setopt_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(options.body.count)), "body size")
        // COPYPOSTFIELDS copies the bytes, so nothing of ours must outlive this call.
        check(options.body.withUnsafeBytes { bytes in
            // An empty body still needs a valid pointer.
            let pointer = bytes.baseAddress.map { UnsafeMutableRawPointer(mutating: $0) } ?? unmanaged
            return nimbus_curl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, pointer)
        }, "body")
        check(nimbus_curl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList), "headers")
        check(nimbus_curl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer), "error buffer")
        check(nimbus_curl_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION, { data, size, count, context in
            guard let data, let context else { return 0 }
            return Unmanaged<CurlPost>.fromOpaque(context).takeUnretainedValue().received(body: data, count: size * count)
        }), "write callback")
        check(nimbus_curl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, unmanaged), "write data")
        check(nimbus_curl_easy_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION, { data, size, count, context in
            guard let data, let context else { return 0 }
            return Unmanaged<CurlPost>.fromOpaque(context).takeUnretainedValue().received(header: data, count: size * count)
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

    /// libcurl's words for a failed transfer: its error buffer, else the code's message.
    func errorDetail(_ code: CURLcode) -> String {
        errorBuffer.pointee == 0 ? Curl.message(code) : String(cString: errorBuffer)
    }

    /// A `CURLINFO_*` long of the finished transfer (the status, the HTTP version).
    func info(_ info: CURLINFO) -> Int {
        var value = 0
        _ = nimbus_curl_easy_getinfo_long(handle, info, &value)
        return value
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
            headers.append((line[..<colon].trimmingCharacters(in: .whitespaces),
                            line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        return count
    }
}
