import Glibc

/// A value guarded by a glibc mutex (`pthread_mutex_t`, default type: one atomic exchange, then
/// the futex — no spinning).
///
/// Used instead of Synchronization's `Mutex`, whose Linux implementation spins in user space
/// before it sleeps: with more runnable threads than the two cores, a waiter spun while the holder
/// was descheduled, and `_MutexHandle.lockSlow` took ~13% of the server's CPU under write load
/// (the pool's and the blocking executor's locks, held for a few instructions each).
package final class Lock<Value>: @unchecked Sendable {
    // @unchecked: `value` is only touched between pthread_mutex_lock and pthread_mutex_unlock.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = UnsafeMutablePointer.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
