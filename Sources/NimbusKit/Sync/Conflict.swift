import Foundation

/// A save the server refused because the record changed there since the copy it was based on.
public struct Conflict: Sendable {
    /// The last synced copy the local edit started from (nil for a create that met an existing record).
    public var base: Record?
    /// The record as the app wants it.
    public var local: Record
    /// The record as the server has it now.
    public var server: Record
}

/// What to do with a conflict.
public enum ConflictResolution: Sendable, Hashable {
    /// Drop the local change; the app is given the server's copy.
    case useServer
    /// Save the local fields over the server's copy.
    case useLocal
    /// Save these fields over the server's copy.
    case useFields([String: RecordValue])
}

/// Ready-made conflict policies.
public enum ConflictPolicy: Sendable, Hashable {
    case serverWins
    case clientWins
    /// The copy with the later date in this field wins whole (a tie keeps the server's).
    case lastWriterWins(field: String)
    /// Field by field against the base: a field changed on one side only takes that side's value;
    /// a field changed on both takes the local value (`preferLocal`) or the server's.
    case fieldMerge(preferLocal: Bool)

    public static let defaultPolicy = ConflictPolicy.fieldMerge(preferLocal: true)

    public func resolve(_ conflict: Conflict) -> ConflictResolution {
        switch self {
        case .serverWins:
            return .useServer
        case .clientWins:
            return .useLocal
        case .lastWriterWins(let field):
            let local = conflict.local.fields[field]?.dateValue ?? .distantPast
            let server = conflict.server.fields[field]?.dateValue ?? .distantPast
            return local > server ? .useLocal : .useServer
        case .fieldMerge(let preferLocal):
            return .useFields(ConflictPolicy.merge(conflict, preferLocal: preferLocal))
        }
    }

    /// The three-way merge of `fieldMerge`.
    public static func merge(_ conflict: Conflict, preferLocal: Bool) -> [String: RecordValue] {
        let base = conflict.base?.fields ?? [:]
        let local = conflict.local.fields
        let server = conflict.server.fields
        var merged: [String: RecordValue] = [:]
        for key in Set(base.keys).union(local.keys).union(server.keys) {
            let localChanged = !Record.sameValue(local[key], base[key])
            let serverChanged = !Record.sameValue(server[key], base[key])
            let value: RecordValue?
            if localChanged && serverChanged {
                value = preferLocal ? local[key] : server[key]
            } else if localChanged {
                value = local[key]
            } else {
                value = server[key]
            }
            if let value { merged[key] = value }
        }
        return merged
    }
}
