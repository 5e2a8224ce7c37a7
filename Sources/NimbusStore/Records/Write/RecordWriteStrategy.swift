import Foundation
import NimbusCore
import NimbusPostgres
import NimbusSupport

/// One way to carry out `records/modify`. `RecordStore.modifyRecords` tries
/// `RecordStore.writeStrategies` in order: a strategy answers (it wrote, or it refused the request
/// with an error) or passes (nil) without having written anything, and the next one is tried.
/// A strategy that planned before passing leaves its plan in `request.handedPlan`; the next one
/// takes it instead of planning again when its read shows that nothing the plan was made against
/// changed (`HandedPlan.plan(for:)`).
protocol RecordWriteStrategy: Sendable {
    /// True when the strategy checks an unverified session's token inside its own statement.
    /// Before any other strategy runs, the token is looked up (once).
    var checksTokenItself: Bool { get }
    func attempt(_ request: inout RecordWriteRequest, in store: RecordStore) async throws -> [ModifyResult]?
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
    /// What a strategy that passed had planned (see `RecordWriteStrategy`).
    var handedPlan: HandedPlan? = nil
}

/// A plan handed on by a strategy that passed, with what it was planned against.
struct HandedPlan: Sendable {
    var plan: ModifyPlan
    /// The zone sequence the plan's sequences count from.
    var baseSequence: Int64
    /// The time the plan stamped its records with; the write that takes the plan writes it too.
    var now: Int64
    /// The version of the schema it was planned with (versions grow with every change).
    var schemaVersion: Int64
    var rows: Rows

    /// The records the plan was made against.
    enum Rows: Sendable {
        /// None: planned without reading (`FastCreate`, against `WriteCaches`).
        case none
        /// The zone's rows as of its sequence `sequence` (every write of a zone bumps it).
        case asOf(zoneID: Int64, sequence: Int64)
    }

    /// The plan counted from the read's zone sequence when the read shows the same schema
    /// version and the same records; nil when it does not, or when the plan refused an operation
    /// (a refusal's wording may depend on the strategy: ASSETID values are only checked under the
    /// zone lock).
    func plan(for read: FirstRead) -> ModifyPlan? {
        guard read.schemaVersion == schemaVersion,
              !plan.results.contains(where: { if case .failed = $0 { true } else { false } }) else { return nil }
        switch rows {
        case .none:
            guard read.existing.isEmpty else { return nil }
        case .asOf(let zoneID, let sequence):
            guard read.zone.id == zoneID, read.zone.changeSequence == sequence else { return nil }
        }
        return plan.rebased(from: baseSequence, onto: read.zone.changeSequence)
    }
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
