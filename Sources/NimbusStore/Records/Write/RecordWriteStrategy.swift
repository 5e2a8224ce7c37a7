import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// One way to carry out `records/modify`. `RecordStore.modifyRecords` tries
/// `RecordStore.writeStrategies` in order: a strategy answers (it wrote, or it refused the request
/// with an error) or passes (nil) without having written anything, and the next one is tried.
protocol RecordWriteStrategy: Sendable {
    /// True when the strategy checks an unverified session's token inside its own statement.
    /// Before any other strategy runs, the token is looked up (once).
    var checksTokenItself: Bool { get }
    func write(_ request: RecordWriteRequest, in store: RecordStore) async throws -> [ModifyResult]?
}

/// A `records/modify` request as the write strategies take it.
struct RecordWriteRequest: Sendable {
    var session: Session
    var zoneName: String
    var operations: [Result<RecordOperation, ItemError>]
    var atomic: Bool
    var limits: Limits
    /// `.cached` when `session` came from `AccountStore.cachedSession`, unchecked.
    var proof: SessionProof = .verified
}

extension RecordStore {
    /// (checksum, size) of every asset-shaped object in the operations' raw fields.
    static func assetCandidates(_ operations: [Result<RecordOperation, ItemError>]) -> [(sha256: [UInt8], size: Int64)] {
        var found: [(sha256: [UInt8], size: Int64)] = []
        func visit(_ value: JSONValue) {
            switch value {
            case .object(let object):
                if case .string(let checksum)? = object["fileChecksum"], case .integer(let size)? = object["size"],
                   let sha = Data(base64Encoded: checksum), sha.count == 32 {
                    found.append((Array(sha), size))
                }
            case .array(let values): values.forEach(visit)
            default: break
            }
        }
        for case .success(let operation) in operations {
            operation.fields.forEach { visit($0.value) }
        }
        return found
    }

    /// Names referenced with DELETE_SELF anywhere in the operations' raw fields.
    static func deleteSelfTargets(_ operations: [Result<RecordOperation, ItemError>]) -> Set<String> {
        var names = Set<String>()
        func visit(_ value: JSONValue) {
            switch value {
            case .object(let object):
                if case .string(let name)? = object["recordName"], case .string("DELETE_SELF")? = object["action"] { names.insert(name) }
            case .array(let values): values.forEach(visit)
            default: break
            }
        }
        for case .success(let operation) in operations {
            operation.fields.forEach { visit($0.value) }
        }
        return names
    }
}
