/// What a thread running an event loop offers the code that runs on it: an executor for tasks,
/// and waiting for a descriptor without blocking the thread (the loop's epoll watches it).
///
/// A request's task runs on its connection's loop; a database round trip made through
/// `waitUntilReady` suspends the task, the loop goes on with other connections, and the answer
/// resumes the task on the same thread — no hop to another thread and back.
package protocol LoopContext: AnyObject, Sendable {
    /// The loop as a task executor (`Task(executorPreference:)`).
    var taskExecutor: any TaskExecutor { get }
    /// Whether the calling thread is this loop's.
    var isCurrent: Bool { get }
    /// Suspends until `descriptor` is readable (or writable, or in error). Only from a task
    /// running on this loop's thread.
    func waitUntilReady(_ descriptor: Int32, writable: Bool) async
}

/// How a database statement runs, stated by whoever asks for it (no thread-local decides).
///
/// A request's task states `.onLoop` with the loop its connection's request came in on
/// (`HTTPRequest.loop`) and runs on that loop; the create combiner's runner, on a thread of a
/// `BlockingExecutor`, states `.blocking`; everything else (tools, background work, tests)
/// `.offloaded`, which is correct anywhere.
package enum Execution: Sendable {
    /// The caller is a task running on this loop: a statement waits for the server through the
    /// loop's epoll, suspending the task (no thread hop); blocking work (a transaction's body)
    /// hops to a thread that may block and back.
    case onLoop(any LoopContext)
    /// The caller's thread may block (a `BlockingExecutor`'s): statements run inline on it.
    case blocking
    /// Anywhere else: blocking work hops to a thread that may block and back.
    case offloaded

    /// The loop to wait on: the stated one when the caller is on its thread (a task that left
    /// its loop falls back to `.offloaded` rather than waiting on another thread's epoll).
    package var currentLoop: (any LoopContext)? {
        guard case .onLoop(let loop) = self, loop.isCurrent else { return nil }
        return loop
    }

    /// Whether blocking work runs inline on the caller's thread.
    package var mayBlock: Bool {
        if case .blocking = self { return true }
        return false
    }
}
