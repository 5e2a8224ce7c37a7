import NimbusCore
import Testing

@Suite struct SchemaDifferenceTests {
    @Test func everyKindOfDifferenceIsFoundByTypeAndField() {
        let development = ContainerSchema(container: "iCloud.x", recordTypes: [
            "Both": RecordTypeSchema(name: "Both", fields: ["same": .string, "new": .int64, "changed": .string],
                                     retention: RetentionPolicy(days: 30, field: "same")),
            "Fresh": RecordTypeSchema(name: "Fresh", fields: ["title": .string]),
        ])
        let production = ContainerSchema(container: "iCloud.x", recordTypes: [
            "Both": RecordTypeSchema(name: "Both", fields: ["same": .string, "old": .string, "changed": .int64]),
            "Gone": RecordTypeSchema(name: "Gone", fields: [:], appendOnly: true),
        ])
        let differences = SchemaDifference.between(development: development, production: production)
        #expect(differences.map { "\($0.kind.rawValue) \($0.recordType).\($0.field ?? "")" } == [
            "fieldTypeDiffers Both.changed", "fieldOnlyInDevelopment Both.new", "fieldOnlyInProduction Both.old",
            "settingsDiffer Both.", "typeOnlyInDevelopment Fresh.", "typeOnlyInProduction Gone.",
        ])
        #expect(differences.filter(\.blocksDeploy).map(\.field) == ["changed"])
        #expect(differences.first { $0.kind == .settingsDiffer }?.development == "retention 30 d from same")
        #expect(differences.first { $0.kind == .typeOnlyInProduction }?.production == "{}; append-only")
    }

    @Test func equalSchemasHaveNoDifference() {
        let schema = ContainerSchema(container: "iCloud.x", recordTypes: ["T": RecordTypeSchema(name: "T", fields: ["a": .string])])
        #expect(SchemaDifference.between(development: schema, production: schema).isEmpty)
        #expect(SchemaDifference.between(development: ContainerSchema(container: "iCloud.x"), production: ContainerSchema(container: "iCloud.x")).isEmpty)
    }
}
