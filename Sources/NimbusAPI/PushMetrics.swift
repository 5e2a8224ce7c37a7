import Foundation
import NimbusStore
import NimbusSupport

/// Push's series in `/metrics` (docs/push.md "For operators"): the counters the store and the
/// sender keep (`PushCounters`), and the queue read from the database at each scrape.
package enum PushMetrics {
    /// How long a scrape waits for the queue's statement before leaving its gauges out: a slow or
    /// unreachable database must not make the whole scrape time out.
    package static let queueReadTimeout: Duration = .seconds(2)

    package static func register(in metrics: Metrics, store: Store, timeout: Duration = queueReadTimeout) {
        let counters = store.pushCounters
        metrics.addCounter("nimbus_push_queued_total", help: "Pushes queued by committed writes.") { Double(counters.snapshot.queued) }
        metrics.addCounter("nimbus_push_sent_total", help: "Push attempts APNs accepted (200).") { Double(counters.snapshot.sent) }
        metrics.addLabeledCounter("nimbus_push_failed_total",
                                  help: "Push attempts not delivered, by APNs reason (no-answer: none came; other: an undocumented one).",
                                  label: "reason") {
            counters.snapshot.failedByReason.mapValues(Double.init)
        }
        metrics.addCounter("nimbus_push_skipped_long_poll_total", help: "Pushes dropped because the device's long-poll delivered first.") {
            Double(counters.snapshot.skippedByLongPoll)
        }
        let report = store.pushReport
        let logger = Logger(subsystem: "metrics")
        metrics.addCollector {
            guard let queue = await read(report, timeout: timeout, logger: logger) else { return [] }
            return [
                Metrics.Family(name: "nimbus_push_queue_depth", help: "Pushes waiting in the outbox (queued, held or being sent).",
                               value: Double(queue.depth)),
                Metrics.Family(name: "nimbus_push_queue_oldest_age_seconds", help: "How long the oldest waiting push has waited (0: none).",
                               value: Double(queue.oldestAgeMillis) / 1000),
            ]
        }
    }

    /// The queue, or nil (logged) when the statement failed or took longer than `timeout`. The
    /// statement runs in a task of its own, since a blocking libpq call cannot be cancelled: one
    /// left behind finishes on its own and its answer is dropped.
    static func read(_ report: PushReport, timeout: Duration, logger: Logger) async -> PushQueueSummary? {
        let answer = OneAnswer<PushQueueSummary?>()
        return await withCheckedContinuation { continuation in
            answer.wait(continuation)
            Task {
                do { answer.give(try await report.queue()) } catch {
                    logger.warning("push queue not read for /metrics: \(error)")
                    answer.give(nil)
                }
            }
            Task {
                try? await Task.sleep(for: timeout)
                if answer.give(nil) { logger.warning("push queue not read for /metrics within \(timeout)") }
            }
        }
    }
}

/// A continuation resumed by the first of several racers.
private final class OneAnswer<Value: Sendable>: Sendable {
    private let state = Lock<(continuation: CheckedContinuation<Value, Never>?, given: Bool)>((nil, false))

    func wait(_ continuation: CheckedContinuation<Value, Never>) {
        state.withLock { $0.continuation = continuation }
    }

    /// Resumes the waiter with `value` unless a racer came first; true when this one did.
    @discardableResult
    func give(_ value: Value) -> Bool {
        let continuation = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard !state.given else { return nil }
            state.given = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: value)
        return continuation != nil
    }
}
