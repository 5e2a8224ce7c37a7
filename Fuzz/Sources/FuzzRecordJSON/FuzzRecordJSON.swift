import NimbusCore
import NimbusSupport

/// Traps with `message` unless `condition` holds (`fatalError` keeps its message in optimized builds).
private func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// The limits `records/modify` bodies are parsed with on the server (depth and string size).
private let parseLimits = JSONValue.ParseLimits(maxDepth: 64, maxStringBytes: 1 << 20)

/// Note (title STRING, count INT64, ratio DOUBLE, parent REFERENCE); Event append-only with
/// retention on `timestamp`; Link (target REFERENCE, targets REFERENCE_LIST): the shapes of the
/// unit tests' fixtures, so typed, retention and reference paths are all reachable.
private let schema: [String: RecordTypeSchema] = [
    "Note": RecordTypeSchema(name: "Note", fields: ["title": .string, "count": .int64, "ratio": .double, "parent": .reference]),
    "Event": RecordTypeSchema(name: "Event", fields: ["appName": .string, "timestamp": .timestamp],
                              retention: RetentionPolicy(days: 30, field: "timestamp"), appendOnly: true),
    "Link": RecordTypeSchema(name: "Link", fields: ["target": .reference, "targets": FieldType(.reference, isList: true)]),
]

private let now: Int64 = 1_700_000_000_000
private let stamp = RecordStamp(timestamp: now - 60_000, userRecordName: "_u1", deviceID: "mac")

/// Rows that already exist, so updates, conflicts, deletes and references meet real records.
private let existing: [String: Record] = [
    "n1": Record(recordName: "n1", recordType: "Note", fields: ["title": .string("a"), "count": .int64(1)],
                 changeTag: "t1", created: stamp, modified: stamp, zoneName: "_defaultZone"),
    "gone": Record(recordName: "gone", recordType: "Note", fields: [:], changeTag: "t2", created: stamp, modified: stamp,
                   deleted: true, zoneName: "_defaultZone"),
]

/// libFuzzer entry for a `records/modify` body: the JSON parser (whatever it accepts must
/// serialize and parse back to the same value), then the one records/modify reader
/// (`ModifyBody`: it must read every JSON object the parser accepts, and nothing else), its
/// rules, field decoding and typing, and planning against a schema and existing rows, in both
/// environments and both atomic modes, as the handler does it. Saved records must render to
/// JSON that parses.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecordJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var limits = Limits()
    limits.maxOperationsPerRequest = 200
    let scanned = ModifyBody.scan(bytes, limits: limits, parseLimits: parseLimits)
    guard let body = try? JSONValue.parse(bytes, limits: parseLimits) else {
        check(scanned == nil, "the records/modify reader accepted what the JSON parser refuses")
        return 0
    }
    if case .object = body {
        check(scanned != nil, "the records/modify reader refused a JSON object the parser accepts")
    } else {
        check(scanned == nil, "the records/modify reader accepted a document that is not an object")
    }

    let written = body.serialized()
    guard let reparsed = try? JSONValue.parse(written, limits: parseLimits) else {
        fatalError("serialized JSON does not parse: \(String(decoding: written, as: UTF8.self).prefix(200))")
    }
    check(reparsed == body, "JSON does not survive a round trip: \(String(decoding: written, as: UTF8.self).prefix(200))")

    var generated = 0
    guard let request = try? scanned?.request(limits: limits, newName: { generated += 1; return "generated-\(generated)" }) else { return 0 }
    let operations = request.operations
    for environment in Environment.allCases {
        for atomic in [false, true] {
            let context = ModifyPlanner.Context(zoneName: "_defaultZone", userRecordName: "_u1", deviceID: "mac", now: now,
                                                baseSequence: 10, environment: environment, maxRecordBytes: 4096, atomic: atomic)
            let plan = ModifyPlanner(context: context).plan(operations, existing: existing, schema: schema)
            check(plan.results.count == operations.count, "\(plan.results.count) results for \(operations.count) operations")
            check(plan.lastSequence >= 10, "the change sequence went backwards")
            for result in plan.results {
                guard case .saved(let record, let keys) = result else { continue }
                var writer = JSONPageWriter()
                record.writeJSON(desiredKeys: keys, downloadURL: { "https://h/\($0.fileChecksum)" }, to: &writer)
                let json = writer.finish()
                check((try? JSONValue.parse(json, limits: parseLimits)) != nil, "a saved record renders to JSON that does not parse")
            }
        }
    }
    return 0
}
