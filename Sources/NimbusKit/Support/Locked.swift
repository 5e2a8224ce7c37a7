import Foundation

/// A value behind a lock, for the little shared state of the client (cached limits, the asset
/// cache's in-flight downloads).
final class Locked<Value>: @unchecked Sendable {
    // Safe: `value` is only read or written while `lock` is held.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
