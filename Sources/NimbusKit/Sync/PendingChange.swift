import Foundation

/// A local change the app hands to the engine: saving a record (create, or update of the fields
/// that differ from the copy it was fetched as) or deleting one.
public enum PendingChange: Sendable, Hashable, Codable {
    case save(Record)
    case delete(RecordID)

    public var recordID: RecordID {
        switch self {
        case .save(let record): return record.id
        case .delete(let id): return id
        }
    }
}

/// An outbox entry: one per record (a later change of the same record replaces it).
struct OutboxEntry: Sendable, Hashable, Codable {
    var change: PendingChange
    /// Order of first enqueue; entries are sent oldest first.
    var sequence: Int64
    /// Bumped by every change of the entry, so that an answer to an older version does not remove it.
    var revision: Int64
    var enqueuedAt: Date
    var attempts: Int
    var lastError: FailedChange.Cause?

    var recordID: RecordID { change.recordID }
}

/// A change the server refused for good (its code says why); it stays here, visible in the
/// status, until the app retries or discards it.
public struct FailedChange: Sendable, Hashable, Codable {
    public struct Cause: Sendable, Hashable, Codable {
        public var code: NimbusError.Code
        public var serverErrorCode: String?
        public var reason: String
    }

    public var change: PendingChange
    public var cause: Cause
    public var failedAt: Date

    public var recordID: RecordID { change.recordID }
}

extension FailedChange.Cause {
    init(_ error: NimbusError) {
        self.init(code: error.code, serverErrorCode: error.serverErrorCode, reason: error.reason)
    }
}
