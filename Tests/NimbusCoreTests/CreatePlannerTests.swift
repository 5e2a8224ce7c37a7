import NimbusSupport
@testable import NimbusCore
import Testing

/// `CreatePlanner` against `ModifyPlanner`: on thousands of generated requests, whenever the lean
/// planner takes one it saves exactly the records, wire forms and expiries the full planner does,
/// and it takes every request of the common shape.
@Suite struct CreatePlannerTests {
    /// SplitMix64: the same requests on every run, so a failure names its seed.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Values by field type: the first ones valid, the rest refused or otherwise outside the shape.
    static let values: [String: (valid: [String], other: [String])] = [
        "STRING": ([#""a""#, #""line\nbreak é \"q\"""#, #""""#], [#""nul\u0000""#, "1", "null"]),
        "INT64": (["1", "-9223372036854775808", "0"], ["1.5", #""x""#, "null"]),
        "DOUBLE": (["0.5", "3", "1e300", "-0.0"], [#""x""#, "[1]"]),
        "TIMESTAMP": (["1800000000000", "1.8e12"], ["1.5", "100", "1e20", "null"]),
        "REFERENCE": ([#"{"recordName":"p"}"#, #"{"recordName":"p","zoneID":{"zoneName":"Other"},"action":"NONE"}"#],
                      [#"{"recordName":"p","action":"DELETE_SELF"}"#, "{}", #"{"recordName":""}"#]),
        "REFERENCE_LIST": ([#"[{"recordName":"a"},{"recordName":"b"}]"#, "[]"],
                           [#"[{"recordName":"a","action":"DELETE_SELF"}]"#, #"["a"]"#]),
        // An encrypted field's values (docs/api.md "Encrypted fields"): canonical padded base64 only.
        "ENCRYPTED_BYTES": ([#""AAEC""#, #""c2VhbGVk""#, #""QQ==""#], [#""""#, #""AAE""#, #""QR==""#, "5", #""a b=""#]),
    ]

    static let schema: [String: RecordTypeSchema] = Fixture.schema.merging([
        "Sample": RecordTypeSchema(name: "Sample", fields: ["s": .string, "i": .int64, "d": .double, "at": .timestamp,
                                                            "ref": .reference, "refs": FieldType(.reference, isList: true),
                                                            "sealed": FieldType(.string, isEncrypted: true)],
                                   retention: RetentionPolicy(days: 7, field: "at")),
    ]) { first, _ in first }

    /// One operation's JSON and whether it is of the common shape (every part valid).
    static func operation(_ index: Int, valid: Bool, using generator: inout SeededGenerator) -> String {
        let types = ["Sample", "Note", "Event", "Link"]
        var recordType = types.randomElement(using: &generator) ?? "Sample"
        var kind = "create"
        var members: [String] = []
        let known = schema[recordType]?.fields ?? [:]
        for (name, type) in known.sorted(by: { $0.key < $1.key }) where Bool.random(using: &generator) || valid {
            let pool = values[type.name] ?? (["1"], [])
            var value = pool.valid.randomElement(using: &generator) ?? "1"
            // An encrypted field's value must say ENCRYPTED_BYTES.
            var declared: String? = Bool.random(using: &generator) || type.isEncrypted ? type.name : nil
            if !valid {
                switch Int.random(in: 0..<8, using: &generator) {
                case 0: value = pool.other.randomElement(using: &generator) ?? value
                case 1: declared = "NOPE"
                case 2: declared = type.name == "STRING" ? "INT64" : "STRING"
                case 3: declared = type.isEncrypted ? nil : "ENCRYPTED_BYTES"
                default: break
                }
            }
            members.append("\"\(name)\":{\"value\":\(value)" + (declared.map { ",\"type\":\"\($0)\"" } ?? "") + "}")
        }
        if !valid {
            switch Int.random(in: 0..<12, using: &generator) {
            case 0: members.append(#""extra":{"value":1}"#)
            case 1: recordType = "Ghost"
            case 2: kind = "forceUpdate"
            case 3: members.append(#""s2":{"value":null}"#)
            default: break
            }
        }
        return #"{"operationType":"\#(kind)","record":{"recordName":"r\#(index)","recordType":"\#(recordType)","fields":{"#
            + members.joined(separator: ",") + "}}}"
    }

    @Test func theLeanPlanSavesWhatTheFullPlannerSavesAndTakesEveryCommonRequest() {
        var taken = 0, declined = 0
        for seed in 0..<3_000 as Range<UInt64> {
            var generator = SeededGenerator(state: seed)
            let valid = seed % 3 == 0
            let operations = (0..<Int.random(in: 1...4, using: &generator)).map {
                Fixture.operation(Self.operation($0, valid: valid, using: &generator))
            }
            let maxBytes = !valid && seed % 7 == 1 ? 150 : 1 << 20
            let environment: Environment = seed % 5 == 2 ? .production : .development
            let context = Fixture.context(environment: environment, maxRecordBytes: maxBytes)
            let plan = ModifyPlanner(context: context).plan(operations, existing: [:], schema: Self.schema)
            guard let lean = CreatePlanner.plan(operations, schema: Self.schema, context: context) else {
                #expect(!valid, "seed \(seed): a request of the common shape was not taken")
                declined += 1
                continue
            }
            taken += 1
            #expect(plan.schemaAdditions.isEmpty && lean.count == operations.count && plan.writes.count == operations.count,
                    "seed \(seed)")
            for (index, created) in lean.enumerated() where index < plan.writes.count {
                guard case .save(var record, _, let targets, let expiresAt) = plan.writes[index],
                      case .saved(_, let keys) = plan.results[index] else {
                    Issue.record("seed \(seed): the planner did not save \(created.record.recordName)")
                    continue
                }
                #expect(targets.isEmpty && keys == created.desiredKeys, "seed \(seed)")
                #expect(created.expiresAt == expiresAt, "seed \(seed)")
                #expect(created.wireFields == Record.wireFields(record.fields), "seed \(seed)")
                record.changeTag = ""
                #expect(created.record == record, "seed \(seed)")
            }
            // The store's second choice, the full planner's records, is the same list.
            let fallback = CreatePlanner.planByModifyPlanner(operations, schema: Self.schema, context: context)
            #expect(fallback?.map(\.wireFields) == lean.map(\.wireFields), "seed \(seed)")
            #expect(fallback?.map(\.expiresAt) == lean.map(\.expiresAt), "seed \(seed)")
        }
        #expect(taken >= 1_000 && declined >= 500, "taken \(taken), declined \(declined)")
    }

    @Test func aNullFieldOrANewFieldIsLeftToTheFullPlanner() {
        let null = Fixture.operation(#"{"operationType":"create","record":{"recordName":"a","recordType":"Note","fields":{"title":{"value":null}}}}"#)
        let new = Fixture.operation(#"{"operationType":"create","record":{"recordName":"a","recordType":"Note","fields":{"mood":{"value":"ok"}}}}"#)
        #expect(CreatePlanner.plan([null], schema: Self.schema, context: Fixture.context()) == nil)
        #expect(CreatePlanner.plan([new], schema: Self.schema, context: Fixture.context()) == nil)
        // The null one the full planner saves as written (no field): the store's second choice.
        #expect(CreatePlanner.planByModifyPlanner([null], schema: Self.schema, context: Fixture.context())?.first?.record.fields == [:])
        // The new field is a schema addition: neither fast plan takes it.
        #expect(CreatePlanner.planByModifyPlanner([new], schema: Self.schema, context: Fixture.context()) == nil)
    }
}
