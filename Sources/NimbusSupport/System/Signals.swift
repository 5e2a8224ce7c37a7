import Dispatch
import Glibc

/// Delivers SIGINT/SIGTERM to a handler through Dispatch instead of killing the process, and makes
/// writes to closed sockets return EPIPE instead of raising SIGPIPE.
package final class SignalTrap: @unchecked Sendable {
    // @unchecked: `sources` is immutable after init and only kept alive here; Dispatch serializes handlers.
    private let sources: [any DispatchSourceSignal]

    /// Installs the trap; keep the returned value alive as long as the handler should run.
    package init(signals: [Int32] = [SIGINT, SIGTERM], handler: @escaping @Sendable (Int32) -> Void) {
        Glibc.signal(SIGPIPE, SIG_IGN)
        let queue = DispatchQueue(label: "nimbus.signals")
        sources = signals.map { number in
            Glibc.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }

    package static func ignoreBrokenPipes() {
        Glibc.signal(SIGPIPE, SIG_IGN)
    }
}
