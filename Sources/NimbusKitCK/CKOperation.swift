import Foundation

/// CloudKit's operation base: an `Operation` whose work runs on the same client as the async API.
/// Add it to a database (`database.add(operation)`), or set `database` and add it to an
/// `OperationQueue` of the app's; its blocks are called from the operation's thread, as in CloudKit.
open class CKOperation: Operation, @unchecked Sendable {
    // Safe as CloudKit's operations are: configured by one owner before it is started.
    public typealias ID = String

    /// What CloudKit's operations are configured with (kept; Nimbus's transport sets its own timeouts).
    public final class Configuration: @unchecked Sendable {
        // Safe: configured before the operation starts.
        public var container: CKContainer?
        public var isLongLived = false
        public var allowsCellularAccess = true
        public var timeoutIntervalForRequest: TimeInterval = 60
        public var timeoutIntervalForResource: TimeInterval = 7 * 24 * 3600
        public var qualityOfService: QualityOfService = .default
        public init() {}
    }

    public var configuration: Configuration! = Configuration()
    public let operationID: ID = UUID().uuidString

    public override init() { super.init() }

    /// The operation's work; subclasses call their blocks from it.
    func execute() async {}

    open override func main() {
        let done = DispatchSemaphore(value: 0)
        NimbusCK.complete({ await self.execute() }) { (_: Void?, _: (any Error)?) in done.signal() }
        done.wait()
    }
}

/// An operation on one database.
open class CKDatabaseOperation: CKOperation, @unchecked Sendable {
    public var database: CKDatabase?

    /// The database, or the error every block gets when none was set.
    func targetDatabase() throws -> CKDatabase {
        guard let database else {
            throw CKError(.invalidArguments, userInfo: [NSLocalizedDescriptionKey: "Add the operation to a database (database.add(_:)) "
                + "or set its database."])
        }
        if isCancelled { throw CKError(.operationCancelled) }
        return database
    }
}

extension CKDatabase {
    static let operationQueue: OperationQueue = {
        let queue = OperationQueue()
        queue.name = "NimbusKitCK operations"
        queue.maxConcurrentOperationCount = 4
        return queue
    }()

    /// Runs an operation against this database, as CloudKit's `add(_:)` does.
    public func add(_ operation: CKDatabaseOperation) {
        if operation.database == nil { operation.database = self }
        CKDatabase.operationQueue.addOperation(operation)
    }
}

extension CKError {
    /// `partialFailure` with each failed item's error, or nil when nothing failed.
    static func partial(_ errors: [AnyHashable: any Error]) -> CKError? {
        guard !errors.isEmpty else { return nil }
        return CKError(.partialFailure, userInfo: [CKPartialErrorsByItemIDKey: errors,
                                                   NSLocalizedDescriptionKey: "\(errors.count) items failed: see partialErrorsByItemID."])
    }
}
