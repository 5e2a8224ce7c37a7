#if canImport(CCurl)
import CCurl
import Foundation

/// The transport of the large answers on Linux (pages of `records/changes`): libcurl's easy
/// interface, each transfer blocking on a serial queue of its own, the body collected in place.
/// swift-corelibs-foundation's URLSession runs the same libcurl underneath but hands every 16 KiB
/// chunk to its delegate queue through a new Dispatch timer and an operation (issue #28 item 8: a
/// first sync's 50 MB spent about 40% of the client's CPU there; this path takes 35–45% less CPU
/// in all). The answer limit, the request's timeout and the task's cancellation hold as in
/// `URLSessionTransport` (a cancelled transfer stops within a second, at libcurl's next progress
/// call). Meant for requests the server answers at once, never a long poll's `wait`. Failures are
/// the `URLError` codes URLSession gives for the same cause, so `NetworkFailureText` words them alike.
final class CurlTransport: HTTPTransport {
    /// Idle easy handles, each keeping its connection alive for the next request.
    private let idle = Locked<[Handle]>([])
    private static let keptIdle = 4
    private static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    /// Where transfers block: serial queues (each on a thread Dispatch keeps and reuses, outside the
    /// concurrency pool), the least busy one taken. A thread made per transfer waited behind every
    /// other runnable thread of a loaded machine before its first run: 2–3 times the wall-clock.
    private static let queues = (0..<4).map { DispatchQueue(label: "nimbus.curl.\($0)") }
    private static let busy = Locked([Int](repeating: 0, count: 4))

    /// A libcurl easy handle, only ever used by one transfer at a time.
    private final class Handle: @unchecked Sendable {
        let raw: UnsafeMutableRawPointer
        init?() {
            guard CurlTransport.initialized, let raw = curl_easy_init() else { return nil }
            self.raw = raw
        }
        deinit { curl_easy_cleanup(raw) }
    }

    /// One transfer's answer as libcurl's callbacks fill it; `cancelled` is set from any thread.
    private final class Transfer: @unchecked Sendable {
        // @unchecked: the callbacks run on the transfer's thread; `cancelled` is behind its lock.
        let limit: Int
        var body = Data()
        var headers: [String: String] = [:]
        var exceeded: Int?
        private let cancelled = Locked(false)
        init(limit: Int) { self.limit = limit }

        var isCancelled: Bool { cancelled.withLock { $0 } }
        func cancel() { cancelled.withLock { $0 = true } }

        func received(body data: UnsafeMutablePointer<CChar>, count: Int) -> Int {
            guard !isCancelled else { return 0 }
            guard body.count + count <= limit else { exceeded = body.count + count; return 0 }
            body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: count)
            return count
        }

        /// A header line ("name: value\r\n"), or a status line that starts a new response.
        func received(header data: UnsafeMutablePointer<CChar>, count: Int) -> Int {
            guard !isCancelled else { return 0 }
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self)
            if line.hasPrefix("HTTP/") {
                headers.removeAll()
            } else if let colon = line.firstIndex(of: ":") {
                let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
                headers[name] = value
                // A declared body past the limit stops before it; one within gets its room at once.
                if name == "content-length", let declared = Int(value) {
                    guard declared <= limit else { exceeded = declared; return 0 }
                    body.reserveCapacity(declared)
                }
            }
            return count
        }
    }

    func send(_ request: HTTPRequest) async throws -> HTTPAnswer {
        let transfer = Transfer(limit: request.limit.bytes)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPAnswer, any Error>) in
                // A blocking transfer must not hold one of the concurrency pool's few threads.
                let index = CurlTransport.busy.withLock { busy in
                    let index = busy.indices.min { busy[$0] < busy[$1] } ?? 0
                    busy[index] += 1
                    return index
                }
                CurlTransport.queues[index].async {
                    let result = Result { try self.perform(request, transfer) }
                    CurlTransport.busy.withLock { $0[index] -= 1 }
                    continuation.resume(with: result)
                }
            }
        } onCancel: {
            transfer.cancel()
        }
    }

    private func perform(_ request: HTTPRequest, _ transfer: Transfer) throws -> HTTPAnswer {
        guard !transfer.isCancelled else { throw URLError(.cancelled) }
        guard let handle = idle.withLock({ $0.popLast() }) ?? Handle() else { throw URLError(.unknown) }
        var keep = false
        defer { if keep { idle.withLock { if $0.count < CurlTransport.keptIdle { $0.append(handle) } } } }
        curl_easy_reset(handle.raw)  // the options of the last request go; its connection stays
        var list: UnsafeMutablePointer<curl_slist>?
        for (name, value) in request.headers { list = curl_slist_append(list, "\(name): \(value)") }
        list = curl_slist_append(list, "Expect:")  // no 100-continue round trip before a body
        defer { curl_slist_free_all(list) }
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        var failed = false
        func set(_ code: CURLcode) { if code != CURLE_OK { failed = true } }
        set(nimbus_curl_easy_setopt_string(handle.raw, CURLOPT_URL, request.url.absoluteString))
        set(nimbus_curl_easy_setopt_string(handle.raw, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(nimbus_curl_easy_setopt_long(handle.raw, CURLOPT_NOSIGNAL, 1))
        set(nimbus_curl_easy_setopt_long(handle.raw, CURLOPT_TIMEOUT_MS, Int(min(request.timeout, 86_400) * 1000)))
        set(nimbus_curl_easy_setopt_string(handle.raw, CURLOPT_CUSTOMREQUEST, request.method))
        if let body = request.body {
            set(nimbus_curl_easy_setopt_long(handle.raw, CURLOPT_POST, 1))
            set(nimbus_curl_easy_setopt_offset(handle.raw, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            // COPYPOSTFIELDS copies the bytes (an empty body still needs a valid pointer).
            set(body.withUnsafeBytes { bytes in
                nimbus_curl_easy_setopt_pointer(handle.raw, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafeRawPointer(context)))
            })
        }
        set(nimbus_curl_easy_setopt_slist(handle.raw, CURLOPT_HTTPHEADER, list))
        set(nimbus_curl_easy_setopt_write_callback(handle.raw, CURLOPT_WRITEFUNCTION, { data, size, count, context in
            guard let data, let context else { return 0 }
            return Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().received(body: data, count: size * count)
        }))
        set(nimbus_curl_easy_setopt_pointer(handle.raw, CURLOPT_WRITEDATA, context))
        set(nimbus_curl_easy_setopt_write_callback(handle.raw, CURLOPT_HEADERFUNCTION, { data, size, count, context in
            guard let data, let context else { return 0 }
            return Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().received(header: data, count: size * count)
        }))
        set(nimbus_curl_easy_setopt_pointer(handle.raw, CURLOPT_HEADERDATA, context))
        // Called at least once a second, also while no byte comes: a cancelled transfer stops there.
        set(nimbus_curl_easy_setopt_long(handle.raw, CURLOPT_NOPROGRESS, 0))
        set(nimbus_curl_easy_setopt_xferinfo_callback(handle.raw, { context, _, _, _, _ in
            guard let context else { return 0 }
            return Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().isCancelled ? 1 : 0
        }))
        set(nimbus_curl_easy_setopt_pointer(handle.raw, CURLOPT_XFERINFODATA, context))
        guard !failed else { throw URLError(.unsupportedURL) }
        let code = withExtendedLifetime(transfer) { curl_easy_perform(handle.raw) }
        if let exceeded = transfer.exceeded { throw request.limit.exceeded(by: exceeded, from: request.url) }
        if transfer.isCancelled { throw URLError(.cancelled) }
        guard code == CURLE_OK else { throw URLError(CurlTransport.code(code)) }
        keep = true
        var status = 0
        _ = nimbus_curl_easy_getinfo_long(handle.raw, CURLINFO_RESPONSE_CODE, &status)
        return HTTPAnswer(status: status, headers: transfer.headers, body: transfer.body)
    }

    /// URLSession's code for the same failure.
    static func code(_ code: CURLcode) -> URLError.Code {
        switch code {
        case CURLE_OPERATION_TIMEDOUT: return .timedOut
        case CURLE_COULDNT_CONNECT: return .cannotConnectToHost
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .cannotFindHost
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CACERT_BADFILE:
            return .secureConnectionFailed
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT: return .unsupportedURL
        default: return .networkConnectionLost
        }
    }
}
#endif
