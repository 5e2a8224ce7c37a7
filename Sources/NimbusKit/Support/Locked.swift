import Foundation

/// A value behind a lock, for the little shared state of the client (cached limits, a download's
/// outcome) and of NimbusKitCK (its configuration, the records and assets apps share between tasks).
package final class Locked<Value>: @unchecked Sendable {
    // Safe: `value` is only read or written while `lock` is held.
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
