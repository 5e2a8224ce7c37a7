import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import NimbusKit

/// Cancelling a request (a long-poll when live mode stops) ends it at once, from another queue
/// than the cancelled task's (see `CancellableRequest`).
@Suite struct CancellableRequestTests {
    /// `body`'s result, or a failure once `seconds` pass (the body is left running).
    private func within<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw TestFailure("did not finish within \(seconds) s")
            }
            return value
        }
    }

    @Test func aRequestTheServerNeverAnswersEndsWhenCancelled() async throws {
        // A listener that never accepts: the kernel takes the connection and the request, and
        // nothing answers.
        let listener = try ChaosProxy.loopbackListener()
        defer { close(listener.descriptor) }
        let request = URLRequest(url: URL(string: "http://127.0.0.1:\(listener.port)/limits")!)
        let session = AnswerCollector.makeSession(.ephemeral)
        let task = Task { try await CancellableRequest.data(session, for: request) }
        try await Task.sleep(nanoseconds: 100_000_000)
        task.cancel()
        let outcome = try await within(5) { await task.result.map { _ in "answered" } }
        guard case .failure(let error) = outcome, (error as? URLError)?.code == .cancelled else {
            Issue.record("expected URLError.cancelled, got \(outcome)")
            return
        }
    }
}
