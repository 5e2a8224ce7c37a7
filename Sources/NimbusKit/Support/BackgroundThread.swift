import Foundation

/// One thread below the app's own in priority (utility QoS on Apple platforms, nice
/// `decodingNiceness` on Linux) that runs the CPU work handed to it, in order: the engine's
/// decoding and opening of change pages.
///
/// A first sync waits on each next page's request (`ChangesPipeline` asks for page N+1 as soon as
/// page N's bytes arrive, then decodes N). Decoding at the same priority as URLSession's threads
/// held them from a core while it ran: on two cores shared with the server, each page's request
/// took 2.2 ms to answer against 1.5 ms alone, and a first sync of 100,000 records 0.52–0.63 s.
/// Here the scheduler lets the request's threads in first and the decoding fills the time they
/// wait: 0.43–0.50 s (docs/performance.md, "A large zone's first sync").
final class BackgroundThread: @unchecked Sendable {
    // @unchecked: `jobs` is only touched while `condition` is locked; the thread is never stopped.

    /// The decoding thread every engine of the process shares.
    static let decoding = BackgroundThread(name: "NimbusKit.decoding", niceness: decodingNiceness)

    /// Linux's nice value of the decoding thread: a tenth of a normal thread's share of a busy core.
    static let decodingNiceness: Int32 = 10

    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []

    /// A thread of its own (it runs as long as the process) at `niceness` on Linux, utility QoS elsewhere.
    init(name: String, niceness: Int32) {
        let thread = Thread { [self] in
            #if os(Linux)
            // PRIO_PROCESS with 0 is the calling thread alone on Linux (nice is per thread there).
            setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
            #endif
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job()
            }
        }
        thread.name = name
        #if !os(Linux)
        thread.qualityOfService = .utility
        #endif
        thread.start()
    }

    /// `work`'s result, computed on this thread after the work handed in before it. Cancelling
    /// the calling task before `work` starts skips it (CancellationError); once started it finishes.
    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        let cancelled = Locked(false)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                enqueue {
                    guard !cancelled.withLock({ $0 }) else { return continuation.resume(throwing: CancellationError()) }
                    continuation.resume(with: Result { try work() })
                }
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
        }
    }

    /// Work handed in and not yet started (tests).
    var waiting: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count
    }

    private func enqueue(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }
}
