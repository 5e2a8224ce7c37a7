import Foundation
@_exported import NimbusKit

/// Where NimbusKitCK's containers find their server, and a way to wait for the work that
/// CloudKit-style completion-handler calls start in the background.
public enum NimbusCK {
    private static let state = Locked<(configuration: NimbusConfiguration?, pending: Int)>((nil, 0))

    /// Sets the server and device token for every `CKContainer` created afterwards. Without it,
    /// `NIMBUS_URL`, `NIMBUS_TOKEN` and `NIMBUS_ENVIRONMENT` are read.
    public static func configure(_ configuration: NimbusConfiguration) {
        state.withLock { $0.configuration = configuration }
    }

    static var configuration: NimbusConfiguration? {
        state.withLock { $0.configuration } ?? NimbusConfiguration.fromEnvironment()
    }

    /// Waits until every operation started through a completion-handler method has called its
    /// handler (a command-line program calls this before it exits).
    public static func waitForPendingOperations(timeout: TimeInterval = 60) async {
        let deadline = Date().addingTimeInterval(timeout)
        while state.withLock({ $0.pending }) > 0 && Date() < deadline {
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
    }

    /// Runs `work` in the background and hands its outcome to a completion handler, as CloudKit
    /// calls its handlers on a queue of its own.
    static func complete<T>(_ work: @escaping @Sendable () async throws -> T, _ handler: @escaping (T?, (any Error)?) -> Void) {
        let box = HandlerBox(handler)
        state.withLock { $0.pending += 1 }
        Task.detached {
            do {
                let value = try await work()
                box.handler(value, nil)
            } catch {
                box.handler(nil, CKError(error))
            }
            state.withLock { $0.pending -= 1 }
        }
    }
}

/// A completion handler carried into the task that calls it.
private final class HandlerBox<T>: @unchecked Sendable {
    // Safe: the handler is called once, from one task; CloudKit's handlers have the same contract.
    let handler: (T?, (any Error)?) -> Void
    init(_ handler: @escaping (T?, (any Error)?) -> Void) { self.handler = handler }
}
