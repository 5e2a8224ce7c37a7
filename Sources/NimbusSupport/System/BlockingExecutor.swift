import Dispatch
import Foundation
import Glibc

/// A task executor whose threads may block: tasks that make blocking database calls run them
/// inline on its threads (they state `Execution.blocking`) instead of hopping to another thread
/// and back — the create combiner's runner, and request tasks where no event loop runs them. On the shared cooperative pool (one thread
/// per core) a blocking call would stall every other task; here it stalls only its own thread,
/// and a new thread is started when a job finds none idle, up to `maxThreads`.
package final class BlockingExecutor: TaskExecutor, Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var head = 0
        var idle = 0
        var threads = 0
    }

    package let maxThreads: Int
    private let state = Lock(State())
    private let wakeups = DispatchSemaphore(value: 0)

    /// The executor request tasks prefer.
    package static let shared = BlockingExecutor(maxThreads: 64)

    package init(maxThreads: Int) {
        self.maxThreads = max(1, maxThreads)
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let (wake, spawn) = state.withLock { state -> (Bool, Bool) in
            state.jobs.append(job)
            if state.idle > 0 {
                state.idle -= 1
                return (true, false)
            }
            if state.threads < maxThreads {
                state.threads += 1
                return (false, true)
            }
            return (false, false)  // every thread is busy: the next one to finish takes it
        }
        if wake { wakeups.signal() }
        if spawn {
            let thread = Thread { [self] in work() }
            thread.name = "nimbus-blocking"
            thread.start()
        }
    }

    private func work() {
        while true {
            let job = state.withLock { state -> UnownedJob? in
                guard state.head < state.jobs.count else {
                    state.jobs.removeAll(keepingCapacity: true)
                    state.head = 0
                    state.idle += 1
                    return nil
                }
                let job = state.jobs[state.head]
                state.head += 1
                if state.head >= 1024 {  // a queue that never drains: drop the taken part
                    state.jobs.removeFirst(state.head)
                    state.head = 0
                }
                return job
            }
            if let job {
                job.runSynchronously(on: asUnownedTaskExecutor())
            } else {
                wakeups.wait()
            }
        }
    }
}
