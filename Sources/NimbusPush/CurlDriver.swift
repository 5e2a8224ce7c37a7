import CCurl
import Dispatch
import Foundation
import NimbusSupport

/// One thread running libcurl's multi interface for every request of a client (APNs' `CurlTransfer`s,
/// the relay client's `CurlExchange`s).
///
/// The multi handle keeps one HTTP/2 connection per host and multiplexes concurrent requests on it as
/// streams (CURLMOPT_PIPELINING = CURLPIPE_MULTIPLEX, CURLMOPT_MAX_HOST_CONNECTIONS = 1, each transfer
/// with CURLOPT_PIPEWAIT). A lost connection is replaced by libcurl on the next request.
///
/// Senders hand transfers over through a locked inbox and wake the thread with `curl_multi_wakeup`
/// (the one multi call libcurl allows from another thread); the thread blocks in `curl_multi_poll`.
final class CurlDriver: @unchecked Sendable {
    // @unchecked: `multi` and `running` are touched only by the driver thread (from `run` until it
    // ends, after which nobody does); `inbox` is behind its lock; `curl_multi_wakeup` is thread-safe.
    private let multi: UnsafeMutableRawPointer
    private var running: [UnsafeMutableRawPointer: any CurlDriven] = [:]
    private let inbox = Lock(Inbox())
    private let exited = DispatchSemaphore(value: 0)

    private struct Inbox {
        var pending: [any CurlDriven] = []
        var stopping = false
    }

    /// The longest the thread sleeps in `curl_multi_poll` without a wake-up or a libcurl timer, so it
    /// notices a stop even if a wake-up were lost.
    private static let maxPollMilliseconds: Int32 = 1000

    /// `maxHostConnections` 1 for APNs (HTTP/2: one connection, many streams); more for an HTTP/1.1 peer.
    init(maxConcurrentStreams: Int, maxHostConnections: Int = 1, threadName: String = "apns-curl") throws(APNsClient.StartError) {
        if let problem = Curl.initialisation { throw APNsClient.StartError(description: problem) }
        guard let multi = curl_multi_init() else { throw APNsClient.StartError(description: "curl_multi_init failed") }
        self.multi = multi
        let settings: [(CURLMoption, Int, String)] = [
            (CURLMOPT_PIPELINING, nimbus_CURLPIPE_MULTIPLEX, "multiplexing"),
            (CURLMOPT_MAX_HOST_CONNECTIONS, maxHostConnections, "connections per host"),
            (CURLMOPT_MAX_CONCURRENT_STREAMS, maxConcurrentStreams, "concurrent streams"),
        ]
        for (option, value, what) in settings {
            let code = nimbus_curl_multi_setopt_long(multi, option, value)
            guard code == CURLM_OK else {
                curl_multi_cleanup(multi)
                throw APNsClient.StartError(description: "libcurl refused \(what): \(Curl.message(code))")
            }
        }
        let thread = Thread { [self] in run() }
        thread.name = threadName
        thread.start()
    }

    /// Queues a transfer; false when the driver is stopping (the transfer was not taken).
    func submit(_ transfer: any CurlDriven) -> Bool {
        inbox.withLock { inbox in
            guard !inbox.stopping else { return false }
            inbox.pending.append(transfer)
            // Under the lock: the thread frees the multi handle under it too, once `stopping` is set,
            // so no wake-up can reach a freed handle.
            curl_multi_wakeup(multi)
            return true
        }
    }

    /// Stops the thread: queued and running transfers fail with `.shutDown`. Waits up to `timeout`
    /// for the thread to end (nil: does not wait).
    func stop(timeout: Duration?) {
        let first = inbox.withLock { inbox in
            guard !inbox.stopping else { return false }
            inbox.stopping = true
            curl_multi_wakeup(multi)
            return true
        }
        guard first else { return }
        if let timeout {
            let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
            _ = exited.wait(timeout: .now() + .nanoseconds(Int(nanoseconds)))
        }
    }

    private func run() {
        while true {
            let (arrived, stopping) = inbox.withLock { inbox in
                defer { inbox.pending.removeAll() }
                return (inbox.pending, inbox.stopping)
            }
            if stopping {
                for transfer in arrived { transfer.fail(.shutDown) }
                break
            }
            for transfer in arrived {
                let code = curl_multi_add_handle(multi, transfer.handle)
                if code == CURLM_OK {
                    running[transfer.handle] = transfer
                } else {
                    transfer.fail(.invalidRequest("curl_multi_add_handle: \(Curl.message(code))"))
                }
            }
            var active: Int32 = 0
            _ = curl_multi_perform(multi, &active)
            collectFinished()
            var timeout = -1
            _ = curl_multi_timeout(multi, &timeout)
            let wait = timeout < 0 ? Self.maxPollMilliseconds : Int32(min(timeout, Int(Self.maxPollMilliseconds)))
            _ = curl_multi_poll(multi, nil, 0, wait, nil)
        }
        for (handle, transfer) in running {
            curl_multi_remove_handle(multi, handle)
            transfer.fail(.shutDown)
        }
        running.removeAll()
        _ = inbox.withLock { _ in curl_multi_cleanup(multi) }
        exited.signal()
    }

    /// Completes every transfer libcurl reports done.
    private func collectFinished() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
            // Read before removing the handle: removal invalidates the message.
            let code = message.pointee.data.result
            curl_multi_remove_handle(multi, handle)
            running.removeValue(forKey: handle)?.complete(code)
        }
    }
}

/// A transfer the driver runs: its easy handle, completed once with libcurl's result or failed without one.
protocol CurlDriven: AnyObject, Sendable {
    var handle: UnsafeMutableRawPointer { get }
    /// libcurl finished the transfer with `code` (driver thread).
    func complete(_ code: CURLcode)
    /// The transfer ends without an answer (shut down, or libcurl refused it).
    func fail(_ error: APNsClientError)
}

extension CurlTransfer: CurlDriven {
    func fail(_ error: APNsClientError) { finish(.failure(error)) }
}
