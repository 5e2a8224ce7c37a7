import Glibc

/// What a thread running an event loop offers the code that runs on it: an executor for tasks,
/// and waiting for a descriptor without blocking the thread (the loop's epoll watches it).
///
/// A request's task runs on its connection's loop; a database round trip made through
/// `waitUntilReady` suspends the task, the loop goes on with other connections, and the answer
/// resumes the task on the same thread — no hop to another thread and back.
package protocol LoopContext: AnyObject, Sendable {
    /// The loop as a task executor (`Task(executorPreference:)`).
    var taskExecutor: any TaskExecutor { get }
    /// Suspends until `descriptor` is readable (or writable, or in error). Only from a task
    /// running on this loop's thread.
    func waitUntilReady(_ descriptor: Int32, writable: Bool) async
}

/// The event loop of the current thread, if it runs one.
package enum CurrentLoop {
    private final class Box {
        let context: any LoopContext
        init(_ context: any LoopContext) { self.context = context }
    }

    private final class Key: @unchecked Sendable {
        // @unchecked: created once, then only read.
        var key = pthread_key_t()
        init() { pthread_key_create(&key, nil) }
    }

    private static let key = Key()

    /// The current thread's loop; nil on any other thread.
    package static var context: (any LoopContext)? {
        guard let pointer = pthread_getspecific(key.key) else { return nil }
        return Unmanaged<Box>.fromOpaque(pointer).takeUnretainedValue().context
    }

    /// Marks the current thread as `context`'s (once, when the loop thread starts; never freed:
    /// loops live as long as the server).
    package static func enter(_ context: any LoopContext) {
        pthread_setspecific(key.key, Unmanaged.passRetained(Box(context)).toOpaque())
    }
}
