import Foundation
import CLinux
import Glibc
import NimbusSupport
import Synchronization

/// LISTEN on one dedicated connection, watched through `PQsocket` with poll(2) on its own thread.
///
/// A notification is a hint to re-read, never the truth: when the connection drops, the listener
/// reconnects with backoff and calls `onConnect` again so that users re-read everything they
/// might have missed in between.
package final class PGListener: Sendable {
    package typealias NotificationHandler = @Sendable (PGNotification) -> Void
    /// Called after every successful (re)connect; `isReconnect` is false the first time.
    package typealias ConnectHandler = @Sendable (_ isReconnect: Bool) -> Void

    private let url: String
    private let channels: [String]
    private let onNotification: NotificationHandler
    private let onConnect: ConnectHandler
    private let stopping = Atomic<Bool>(false)
    private let wakeDescriptor: Int32
    private let finished = DispatchSemaphore(value: 0)
    private let logger = Logger(subsystem: "listener")
    private let connected = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)

    package init(url: String, channels: [String], onNotification: @escaping NotificationHandler, onConnect: @escaping ConnectHandler = { _ in }) {
        self.url = url
        self.channels = channels
        self.onNotification = onNotification
        self.onConnect = onConnect
        wakeDescriptor = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
    }

    deinit {
        close(wakeDescriptor)
    }

    /// True while the LISTEN connection is up.
    package var isConnected: Bool { connected.load(ordering: .relaxed) }

    /// Starts the listening thread.
    package func start() {
        guard started.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged else { return }
        let thread = Thread { [self] in run() }
        thread.name = "nimbus-listener"
        thread.start()
    }

    /// Stops the thread and closes the connection; returns when it has.
    package func stop() {
        let wasStopping = stopping.exchange(true, ordering: .sequentiallyConsistent)
        if !started.exchange(true, ordering: .sequentiallyConsistent) || wasStopping { return }
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, 8)
        finished.wait()
    }

    private func run() {
        var backoff = 0.1
        var isReconnect = false
        while !stopping.load(ordering: .sequentiallyConsistent) {
            do {
                let connection = try PGConnection.connect(url: url, connectTimeoutSeconds: 5, applicationName: "nimbus-listener")
                for channel in channels {
                    try connection.run("LISTEN \(identifier: channel)")
                }
                connected.store(true, ordering: .relaxed)
                // libpq buffers notifications that arrive while a statement runs without waking
                // the socket: drain after every statement.
                connection.drainNotifications().forEach(onNotification)
                if isReconnect { logger.notice("LISTEN connection re-established") }
                onConnect(isReconnect)
                isReconnect = true
                backoff = 0.1
                try watch(connection)
            } catch {
                if stopping.load(ordering: .sequentiallyConsistent) { break }
                logger.warning("LISTEN connection failed; retrying", ["error": "\(error)", "retryIn": backoff])
            }
            connected.store(false, ordering: .relaxed)
            sleepUnlessStopped(seconds: backoff)
            backoff = min(backoff * 2, 5)
        }
        connected.store(false, ordering: .relaxed)
        finished.signal()
    }

    /// Waits for input until the connection fails or the listener stops.
    private func watch(_ connection: PGConnection) throws {
        let socket = connection.socketDescriptor
        guard socket >= 0 else { throw PGError(.connectionLost, "the LISTEN connection has no socket") }
        var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)]
        while !stopping.load(ordering: .sequentiallyConsistent) {
            let ready = poll(&descriptors, 2, 1000)
            if ready < 0 {
                if errno == EINTR { continue }
                throw PGError(.connectionLost, "poll failed: \(String(cString: strerror(errno)))")
            }
            if descriptors[0].revents != 0 {
                for notification in try connection.consumeNotifications() {
                    onNotification(notification)
                }
                if connection.isBroken { throw PGError(.connectionLost, "the LISTEN connection closed") }
            }
        }
    }

    private func sleepUnlessStopped(seconds: Double) {
        var descriptor = pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, Int32(seconds * 1000))
    }
}
