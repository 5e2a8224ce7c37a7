/// What to tell a client that named a record type or field production does not have: deploy it
/// when development has it, else the closest deployed names ("did you mean …?").
package enum SchemaAdvice {
    /// A record type missing from `production` of `container`.
    package static func missingRecordType(_ name: String, container: String,
                                          production: ContainerSchema, development: ContainerSchema) -> String {
        if development.recordTypes[name] != nil {
            return "Record type \(name) exists in development but is not deployed to production; "
                + "deploy it with `nimbus schema deploy \(container)` (or the admin console's Schema page)."
        }
        return "Record type \(Names.quoted(name)) does not exist in \(container) (in production or development); "
            + suggestion(for: name, among: Array(production.recordTypes.keys), kind: "record types")
    }

    /// A field missing from `recordType` in production.
    package static func missingField(_ field: String, of recordType: String, container: String,
                                     production: ContainerSchema, development: ContainerSchema) -> String {
        if development.recordTypes[recordType]?.fields[field] != nil {
            return "Field \(field) of \(recordType) exists in development but is not deployed to production; "
                + "deploy it with `nimbus schema deploy \(container)`."
        }
        return "Field \(Names.quoted(field)) of \(recordType) does not exist in \(container); "
            + suggestion(for: field, among: production.recordTypes[recordType].map { Array($0.fields.keys) } ?? [],
                         kind: "fields of \(recordType)")
    }

    /// "did you mean X?" for names within a small edit distance, else the valid names.
    static func suggestion(for name: String, among names: [String], kind: String) -> String {
        let lowered = Array(name.lowercased())
        let scored = names.map { (name: $0, distance: distance(lowered, Array($0.lowercased()))) }
        let limit = max(2, lowered.count / 3)
        let close = scored.filter { $0.distance <= limit }.sorted { ($0.distance, $0.name) < ($1.distance, $1.name) }
        if let best = close.first {
            return "did you mean \(best.name)?"
        }
        guard !names.isEmpty else { return "production has no \(kind) yet." }
        let listed = names.sorted().prefix(20).joined(separator: ", ")
        return "the deployed \(kind) are \(listed)\(names.count > 20 ? ", …" : "")."
    }

    /// Levenshtein distance.
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = Swift.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
