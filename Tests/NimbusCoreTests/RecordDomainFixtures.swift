import Foundation
import NimbusSupport
@testable import NimbusCore

/// Shared builders for the record-domain tests (planner, typer, operations, queries, schema files).
enum Fixture {
    static let zone = "Notes"
    static let now: Int64 = 1_800_000_000_000
    static let earlier: Int64 = 1_700_000_000_000
    static let baseSequence: Int64 = 100

    /// Parses JSON text written in a test; a typo in a literal is a test bug, so it traps.
    static func json(_ text: String) -> JSONValue {
        do {
            return try JSONValue.parse(text)
        } catch {
            fatalError("test JSON does not parse: \(error) in \(text)")
        }
    }

    /// One `operations` element, read and checked as the API does (`ModifyBody`).
    static func operation(_ text: String) -> Result<RecordOperation, ItemError> {
        operation(text, zone: Names.defaultZone)
    }

    /// One `operations` element of a request for `zone`.
    static func operation(_ text: String, zone: String) -> Result<RecordOperation, ItemError> {
        guard let draft = JSONScanner.scan(Array(text.utf8), { try OperationDraft.read(&$0) }) else {
            fatalError("test JSON does not parse: \(text)")
        }
        return draft.validated(zone: zone)
    }

    static func stamp(_ timestamp: Int64 = earlier, device: String = "iphone") -> RecordStamp {
        RecordStamp(timestamp: timestamp, userRecordName: "_u1", deviceID: device)
    }

    /// The stamp the planner gives a save under `context()`.
    static var contextStamp: RecordStamp { RecordStamp(timestamp: now, userRecordName: "_u1", deviceID: "mac") }

    static func record(_ name: String, type: String = "Note", fields: [String: FieldValue] = ["title": .string("a"), "count": .int64(1)],
                       tag: String = "t1", deleted: Bool = false, created: Int64 = earlier, zone: String = Fixture.zone) -> Record {
        Record(recordName: name, recordType: type, fields: fields, changeTag: tag,
               created: stamp(created), modified: stamp(created + 1000), deleted: deleted, zoneName: zone)
    }

    static func context(environment: Environment = .development, maxRecordBytes: Int = 1 << 20, atomic: Bool = false,
                        baseSequence: Int64 = Fixture.baseSequence) -> ModifyPlanner.Context {
        ModifyPlanner.Context(zoneName: zone, userRecordName: "_u1", deviceID: "mac", now: now, baseSequence: baseSequence,
                              environment: environment, maxRecordBytes: maxRecordBytes, atomic: atomic)
    }

    /// Note (title STRING, count INT64, ratio DOUBLE, parent REFERENCE); Event append-only with 30 days
    /// retention on `timestamp`; Link (target REFERENCE, targets REFERENCE_LIST).
    static let schema: [String: RecordTypeSchema] = [
        "Note": RecordTypeSchema(name: "Note", fields: ["title": .string, "count": .int64, "ratio": .double, "parent": .reference]),
        "Event": RecordTypeSchema(name: "Event", fields: ["appName": .string, "timestamp": .timestamp],
                                  retention: RetentionPolicy(days: 30, field: "timestamp"), appendOnly: true),
        "Link": RecordTypeSchema(name: "Link", fields: ["target": .reference, "targets": FieldType(.reference, isList: true)]),
    ]

    static func plan(_ operations: [String], existing: [Record] = [], schema: [String: RecordTypeSchema] = Fixture.schema,
                     context: ModifyPlanner.Context = Fixture.context()) -> ModifyPlan {
        var byName: [String: Record] = [:]
        for record in existing { byName[record.recordName] = record }
        return ModifyPlanner(context: context).plan(operations.map(operation), existing: byName, schema: schema)
    }

    /// The repository root, for the schema files in `deploy/schemas/`.
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}

extension ModifyResult {
    var savedRecord: Record? {
        if case .saved(let record, _) = self { return record }
        return nil
    }

    var error: ItemError? {
        if case .failed(let error) = self { return error }
        return nil
    }

    var deletedName: String? {
        if case .deleted(let name) = self { return name }
        return nil
    }
}

extension RecordWrite {
    var sequence: Int64 {
        switch self {
        case .save(_, let sequence, _, _): sequence
        case .delete(_, _, let sequence): sequence
        }
    }

    var recordName: String {
        switch self {
        case .save(let record, _, _, _): record.recordName
        case .delete(let name, _, _): name
        }
    }

    var savedRecord: Record? {
        if case .save(let record, _, _, _) = self { return record }
        return nil
    }

    var deleteSelfTargets: [String]? {
        if case .save(_, _, let targets, _) = self { return targets }
        return nil
    }

    var expiresAt: Int64?? {
        if case .save(_, _, _, let expiresAt) = self { return .some(expiresAt) }
        return nil
    }
}

extension Result where Failure == ItemError {
    var itemError: ItemError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
