import NimbusSupport
import NimbusCore
import Testing

/// What a production request naming a missing record type or field is told.
@Suite struct SchemaAdviceTests {
    private func schema(_ types: [String: [String: FieldType]]) -> ContainerSchema {
        var schema = ContainerSchema(container: "iCloud.com.example.App")
        for (name, fields) in types {
            var type = RecordTypeSchema(name: name)
            type.fields = fields
            schema.recordTypes[name] = type
        }
        return schema
    }

    @Test func aTypeOnlyInDevelopmentIsToBeDeployed() {
        let production = schema(["BlockedAppEvent": ["appName": .string]])
        let development = schema(["BlockedAppEvent": ["appName": .string, "bundleID": .string], "LockedAppList": [:]])
        let reason = SchemaAdvice.missingRecordType("LockedAppList", container: "iCloud.com.example.App", production: production, development: development)
        #expect(reason.contains("exists in development but is not deployed") && reason.contains("nimbus schema deploy iCloud.com.example.App"))
        let field = SchemaAdvice.missingField("bundleID", of: "BlockedAppEvent", container: "iCloud.com.example.App",
                                              production: production, development: development)
        #expect(field.contains("Field bundleID of BlockedAppEvent exists in development but is not deployed"))
    }

    @Test func aTypeNowhereGetsTheClosestDeployedNameOrTheList() {
        let production = schema(["BlockedAppEvent": ["appName": .string], "FailedAuthEvent": [:], "LockedAppList": [:]])
        let typo = SchemaAdvice.missingRecordType("BlockedAppEvnt", container: "C", production: production, development: production)
        #expect(typo == "Record type \"BlockedAppEvnt\" does not exist in C (in production or development); did you mean BlockedAppEvent?")
        #expect(SchemaAdvice.missingRecordType("blockedappevent", container: "C", production: production, development: production)
            .hasSuffix("did you mean BlockedAppEvent?"))
        let far = SchemaAdvice.missingRecordType("Photo", container: "C", production: production, development: production)
        #expect(far.hasSuffix("the deployed record types are BlockedAppEvent, FailedAuthEvent, LockedAppList."))
        let field = SchemaAdvice.missingField("appNme", of: "BlockedAppEvent", container: "C", production: production, development: production)
        #expect(field.hasSuffix("did you mean appName?"))
        let empty = SchemaAdvice.missingRecordType("Photo", container: "C", production: schema([:]), development: schema([:]))
        #expect(empty.hasSuffix("production has no record types yet."))
    }
}
