import NimbusSupport

/// What differs between two environments' schemas of one container, field by field: what a
/// deploy from development would change in production (the console's preview).
package struct SchemaDifference: Sendable, Hashable {
    package enum Kind: String, Sendable {
        /// The type exists only in development: a deploy creates it.
        case typeOnlyInDevelopment
        /// The type exists only in production: a deploy leaves it.
        case typeOnlyInProduction
        /// The field exists only in development: a deploy adds it.
        case fieldOnlyInDevelopment
        /// The field exists only in production: a deploy keeps it (fields are never removed).
        case fieldOnlyInProduction
        /// The field's type differs: a deploy is refused (stored records would not read).
        case fieldTypeDiffers
        /// Retention or append-only differ: a deploy takes development's.
        case settingsDiffer
    }

    package var kind: Kind
    package var recordType: String
    package var field: String?
    package var development: String?
    package var production: String?

    /// Whether a deploy refuses to go ahead because of this difference.
    package var blocksDeploy: Bool { kind == .fieldTypeDiffers }

    /// The differences, by record type and field.
    package static func between(development: ContainerSchema, production: ContainerSchema) -> [SchemaDifference] {
        var differences: [SchemaDifference] = []
        for name in Set(development.recordTypes.keys).union(production.recordTypes.keys).sorted() {
            switch (development.recordTypes[name], production.recordTypes[name]) {
            case (let type?, nil):
                differences.append(SchemaDifference(kind: .typeOnlyInDevelopment, recordType: name, development: describe(type)))
            case (nil, let type?):
                differences.append(SchemaDifference(kind: .typeOnlyInProduction, recordType: name, production: describe(type)))
            case (let developed?, let deployed?):
                differences += fields(developed, deployed)
                if describeSettings(developed) != describeSettings(deployed) {
                    differences.append(SchemaDifference(kind: .settingsDiffer, recordType: name,
                                                        development: describeSettings(developed), production: describeSettings(deployed)))
                }
            case (nil, nil):
                break
            }
        }
        return differences
    }

    private static func fields(_ developed: RecordTypeSchema, _ deployed: RecordTypeSchema) -> [SchemaDifference] {
        Set(developed.fields.keys).union(deployed.fields.keys).sorted().compactMap { field in
            let name = developed.name
            switch (developed.fields[field], deployed.fields[field]) {
            case (let type?, nil):
                return SchemaDifference(kind: .fieldOnlyInDevelopment, recordType: name, field: field, development: type.schemaName)
            case (nil, let type?):
                return SchemaDifference(kind: .fieldOnlyInProduction, recordType: name, field: field, production: type.schemaName)
            case (let a?, let b?) where a != b:
                return SchemaDifference(kind: .fieldTypeDiffers, recordType: name, field: field, development: a.schemaName, production: b.schemaName)
            default:
                return nil
            }
        }
    }

    private static func describe(_ type: RecordTypeSchema) -> String {
        let fields = type.fields.keys.sorted().map { "\($0): \(type.fields[$0]?.schemaName ?? "")" }.joined(separator: ", ")
        return "{\(fields)}" + (describeSettings(type).isEmpty ? "" : "; " + describeSettings(type))
    }

    private static func describeSettings(_ type: RecordTypeSchema) -> String {
        var parts: [String] = []
        if let retention = type.retention {
            parts.append("retention \(retention.days) d" + (retention.field.map { " from \($0)" } ?? ""))
        }
        if type.appendOnly { parts.append("append-only") }
        return parts.joined(separator: ", ")
    }
}
