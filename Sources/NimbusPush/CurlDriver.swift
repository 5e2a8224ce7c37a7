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
/// The thread drives libcurl with `curl_multi_socket_action`: it polls the sockets libcurl names (and
/// its timer) through `nimbus_curl_watch` (CCurl) and tells libcurl which socket is ready, so only that
/// socket's transfers run, without each polling it again (what `curl_multi_perform` does: a poll(2) per
/// running transfer per call). Senders hand transfers over through a locked inbox and wake the thread
/// with an eventfd, written only when the inbox was empty (a burst of submits is one wake-up).
final class CurlDriver: @unchecked Sendable {
    // @unchecked: `multi`, `watch` and `running` are touched only by the driver thread (from `run` until
    // it ends, after which nobody does); `inbox` is behind its lock, and the eventfd is written under it.
    private let multi: UnsafeMutableRawPointer
    private let watch: UnsafeMutablePointer<nimbus_curl_watch>
    private let wakeup: Int32
    private var running: [UnsafeMutableRawPointer: any CurlDriven] = [:]
    private let inbox = Lock(Inbox())
    private let exited = DispatchSemaphore(value: 0)

    private struct Inbox {
        var pending: [any CurlDriven] = []
        var stopping = false
        /// The eventfd is closed (the thread ended): nothing may write it.
        var closed = false
    }

    /// The longest the thread sleeps in poll(2) without a wake-up or a libcurl timer; then it runs
    /// libcurl's timeouts anyway (a timer update missed cannot stall a transfer longer than this).
    private static let maxPollMilliseconds: Int64 = 1000

    /// `maxHostConnections` 1 for APNs (HTTP/2: one connection, many streams); more for an HTTP/1.1 peer.
    init(maxConcurrentStreams: Int, maxHostConnections: Int = 1, threadName: String = "apns-curl") throws(APNsClient.StartError) {
        if let problem = Curl.initialisation { throw APNsClient.StartError(description: problem) }
        guard let multi = curl_multi_init() else { throw APNsClient.StartError(description: "curl_multi_init failed") }
        self.multi = multi
        watch = .allocate(capacity: 1)
        let settings: [(CURLMoption, Int, String)] = [
            (CURLMOPT_PIPELINING, nimbus_CURLPIPE_MULTIPLEX, "multiplexing"),
            (CURLMOPT_MAX_HOST_CONNECTIONS, maxHostConnections, "connections per host"),
            (CURLMOPT_MAX_CONCURRENT_STREAMS, maxConcurrentStreams, "concurrent streams"),
        ]
        var problem: String?
        for (option, value, what) in settings where problem == nil {
            let code = nimbus_curl_multi_setopt_long(multi, option, value)
            if code != CURLM_OK { problem = "libcurl refused \(what): \(Curl.message(code))" }
        }
        if problem == nil {
            let code = nimbus_curl_multi_watch(multi, watch)
            if code != CURLM_OK { problem = "libcurl refused its socket and timer callbacks (or no eventfd): \(Curl.message(code))" }
        }
        wakeup = watch.pointee.fds.0.fd
        if let problem {
            curl_multi_cleanup(multi)
            if wakeup >= 0 { close(wakeup) }
            watch.deallocate()
            throw APNsClient.StartError(description: problem)
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
            // The first of a burst wakes the thread; it takes the whole inbox at once. Under the lock:
            // the thread closes the eventfd under it too, so no write can reach a closed descriptor.
            if inbox.pending.count == 1 { nimbus_wakeup_signal(wakeup) }
            return true
        }
    }

    /// Stops the thread: queued and running transfers fail with `.shutDown`. Waits up to `timeout`
    /// for the thread to end (nil: does not wait).
    func stop(timeout: Duration?) {
        let first = inbox.withLock { inbox in
            guard !inbox.stopping else { return false }
            inbox.stopping = true
            if !inbox.closed { nimbus_wakeup_signal(wakeup) }
            return true
        }
        guard first else { return }
        if let timeout {
            let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
            _ = exited.wait(timeout: .now() + .nanoseconds(Int(nanoseconds)))
        }
    }

    private func run() {
        var active: Int32 = 0
        let fds = nimbus_curl_watch_fds(watch)!
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
                // libcurl sets its timer to 0 for a new transfer: it starts in this round's timeout action.
                let code = curl_multi_add_handle(multi, transfer.handle)
                if code == CURLM_OK {
                    running[transfer.handle] = transfer
                } else {
                    transfer.fail(.invalidRequest("curl_multi_add_handle: \(Curl.message(code))"))
                }
            }
            let deadline = watch.pointee.deadline
            let now = nimbus_monotonic_milliseconds()
            let wait = deadline < 0 ? Self.maxPollMilliseconds : min(max(deadline - now, 0), Self.maxPollMilliseconds)
            let count = Int(watch.pointee.count)
            let ready = poll(fds, nfds_t(count + 1), Int32(wait))
            if ready > 0 {
                if fds[0].revents != 0 { nimbus_wakeup_drain(wakeup) }
                // The callbacks change `fds` while libcurl acts: act on a copy of what was ready.
                var events: [(Int32, Int32)] = []
                for index in 1..<(count + 1) where fds[index].revents != 0 {
                    let revents = Int32(fds[index].revents)
                    var bits: Int32 = 0
                    if revents & Int32(POLLIN | POLLHUP) != 0 { bits |= nimbus_CURL_CSELECT_IN }
                    if revents & Int32(POLLOUT) != 0 { bits |= nimbus_CURL_CSELECT_OUT }
                    if revents & Int32(POLLERR | POLLNVAL) != 0 { bits |= nimbus_CURL_CSELECT_ERR }
                    events.append((fds[index].fd, bits))
                    fds[index].revents = 0
                }
                for (socket, bits) in events {
                    _ = curl_multi_socket_action(multi, curl_socket_t(socket), bits, &active)
                }
            }
            let timer = watch.pointee.deadline
            if ready == 0 || (timer >= 0 && timer <= nimbus_monotonic_milliseconds()) {
                _ = curl_multi_socket_action(multi, curl_socket_t(nimbus_CURL_SOCKET_TIMEOUT), 0, &active)
            }
            collectFinished()
            // The timer callback skips a timeout equal to the one it last gave: ask libcurl itself.
            var timeout = -1
            _ = curl_multi_timeout(multi, &timeout)
            watch.pointee.deadline = timeout < 0 ? -1 : nimbus_monotonic_milliseconds() + Int64(timeout)
        }
        for (handle, transfer) in running {
            curl_multi_remove_handle(multi, handle)
            transfer.fail(.shutDown)
        }
        running.removeAll()
        inbox.withLock { inbox in
            curl_multi_cleanup(multi)
            close(wakeup)
            inbox.closed = true
        }
        watch.deallocate()
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
