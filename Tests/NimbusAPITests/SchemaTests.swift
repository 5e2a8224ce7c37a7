import Foundation
import NimbusCore
import NimbusSupport
import Testing

/// Schema (was the curl scenario 36): development learns types and fields just in time and then
/// holds them; a failed save teaches nothing; production accepts only deployed types and fields
/// until a deploy; imported appendOnly types refuse every update form but allow create, the create
/// retry and delete. (`nimbus schema show|import` as a command stays in the scenario.)
@Suite struct SchemaTests {
    private static let container = "com.example.SchemaTest"

    private static func save(_ api: APIFixture, _ token: String, _ kind: String, _ name: String, _ type: String, _ fields: String, tag: String? = nil,
                             container: String = container, environment: String = "development") async -> Answer {
        await api.modify(token, [Op.record(kind, name, type, fields: fields, tag: tag)], container: container, environment: environment)
    }

    /// The reason of an answer's first item.
    private static func reason(_ answer: Answer) -> String { answer.records.first?["reason"]?.stringValue ?? "" }

    @Test func theFirstSaveDefinesTypesAndLaterSavesMustMatchThem() async throws {
        try await APIFixture.with { api in
            let token = try await api.token()
            let first = await Self.save(api, token, "create", "w1", "Widget", #"""
                {"name":{"value":"first"},"count":{"value":3},"ratio":{"value":0.5},"big":{"value":1e3},"tags":{"value":["a","b"]},"nums":{"value":[1,2.5]},
                 "ints":{"value":[1,2]},"when":{"value":1795000000000,"type":"TIMESTAMP"},"blob":{"value":"AAEC","type":"BYTES"},"link":{"value":{"recordName":"w0","action":"NONE"},"type":"REFERENCE"}}
                """#)
            #expect(first.codes == ["ok"], "\(first)")
            let shown = try await api.schemaText(Self.container)
            for (field, type) in [("name", "STRING"), ("count", "INT64"), ("ratio", "DOUBLE"), ("big", "DOUBLE"), ("tags", "STRING_LIST"), ("nums", "DOUBLE_LIST"),
                                  ("ints", "INT64_LIST"), ("when", "TIMESTAMP"), ("blob", "BYTES"), ("link", "REFERENCE")] {
                #expect(shown.contains(#""\#(field)":"\#(type)""#), "schema lacks \(field) \(type): \(shown)")
            }
            #expect(first.value("w1", "count") == .integer(3) && first.value("w1", "ratio") == .double(0.5))
            #expect(first.recordItem("w1")?["fields"]?["nums"]?["type"]?.stringValue == "DOUBLE_LIST" && first.value("w1", "nums")?.arrayValue?.last == .double(2.5))

            for fields in [#"{"count":{"value":"three"}}"#, #"{"count":{"value":2.5}}"#, #"{"count":{"value":3,"type":"DOUBLE"}}"#, #"{"name":{"value":5}}"#,
                           #"{"tags":{"value":"a"}}"#, #"{"tags":{"value":[1]}}"#, #"{"when":{"value":"noon"}}"#, #"{"link":{"value":"w0"}}"#] {
                let refused = await Self.save(api, token, "forceUpdate", "w2", "Widget", fields)
                #expect(refused.codes == ["BAD_REQUEST"] && refused.records.first?.isErrorBody == true, "Widget with \(fields): \(refused)")
            }
            let reason = Self.reason(await Self.save(api, token, "forceUpdate", "w2", "Widget", #"{"count":{"value":"7"}}"#))
            for word in ["w2", "count", "INT64", "string"] { #expect(reason.contains(word), "reason '\(reason)' does not name \(word)") }
            let typed = await Self.save(api, token, "forceUpdate", "w2", "Widget", #"{"count":{"value":7},"ratio":{"value":2},"when":{"value":1795000000001}}"#)
            #expect(typed.codes == ["ok"], "\(typed)")
            #expect(typed.recordItem("w2")?["fields"]?["ratio"]?["type"]?.stringValue == "DOUBLE" && typed.value("w2", "ratio")?.doubleValue == 2)
            #expect(typed.recordItem("w2")?["fields"]?["when"]?["type"]?.stringValue == "TIMESTAMP" && typed.value("w2", "when") == .integer(1_795_000_000_001))
        }
    }

    @Test func aRefusedOrRolledBackSaveTeachesTheSchemaNothing() async throws {
        try await APIFixture.with { api in
            let token = try await api.token()
            _ = await Self.save(api, token, "create", "w1", "Widget", #"{"count":{"value":3}}"#)
            #expect(await Self.save(api, token, "forceUpdate", "w3", "Widget", #"{"learned":{"value":"text"},"count":{"value":"bad"}}"#).codes == ["BAD_REQUEST"])
            let atomic = await api.database("records/modify", token: token, #"""
                {"atomic":true,"operations":[{"operationType":"create","record":{"recordName":"g1","recordType":"Gizmo","fields":{"size":{"value":"large"}}}},
                 {"operationType":"update","record":{"recordName":"w1","recordChangeTag":"zzzz","fields":{"count":{"value":1}}}}]}
                """#, container: Self.container)
            #expect(atomic.codes == ["ATOMIC_ERROR", "CONFLICT"], "\(atomic)")
            let shown = try await api.schemaText(Self.container)
            #expect(!shown.contains(#""learned""#) && !shown.contains(#""Gizmo""#), "\(shown)")
            #expect(await Self.save(api, token, "forceUpdate", "w3", "Widget", #"{"learned":{"value":42}}"#).codes == ["ok"])
            #expect(await Self.save(api, token, "create", "g1", "Gizmo", #"{"size":{"value":3}}"#).codes == ["ok"])
        }
    }

    @Test func concurrentFirstDefinitionsOfAFieldInTwoZonesHaveOneWinner() async throws {
        try await APIFixture.with { api in
            let token = try await api.token()
            _ = await api.modifyZones(token, ["create:Left", "create:Right"], container: Self.container)
            for round in 1...8 {
                let type = "Race\(round % 2)"
                async let left = api.modify(token, zone: "Left", [Op.record("create", "l\(round)", type, fields: #"{"f\#(round)":{"value":"text"}}"#)], container: Self.container)
                async let right = api.modify(token, zone: "Right", [Op.record("create", "r\(round)", type, fields: #"{"f\#(round)":{"value":7}}"#)], container: Self.container)
                let (l, r) = await (left, right)
                try #require(l.status == 200 && r.status == 200, "round \(round): \(l) / \(r)")
                let want: String
                switch (l.codes, r.codes) {
                case (["ok"], ["BAD_REQUEST"]): want = "STRING"
                case (["BAD_REQUEST"], ["ok"]): want = "INT64"
                default: Issue.record("round \(round): expected one definition to win: \(l) / \(r)"); continue
                }
                #expect(try await api.schemaText(Self.container).contains(#""f\#(round)":"\#(want)""#), "round \(round): the schema does not hold the winner's \(want)")
            }
        }
    }

    @Test func productionAcceptsOnlyDeployedTypesAndFields() async throws {
        try await APIFixture.with { api in
            let token = try await api.token()
            _ = await Self.save(api, token, "create", "w1", "Widget", #"{"name":{"value":"first"},"count":{"value":3},"ints":{"value":[1,2]}}"#)
            func prod(_ kind: String, _ name: String, _ type: String, _ fields: String) async -> [String] {
                await Self.save(api, token, kind, name, type, fields, environment: "production").codes
            }
            #expect(await prod("create", "p1", "Widget", #"{"name":{"value":"prod"}}"#) == ["BAD_REQUEST"])
            let query = await api.database("records/query", token: token, #"{"query":{"recordType":"Widget"}}"#, container: Self.container, environment: "production")
            #expect(query.status == 400 && query.serverErrorCode == "BAD_REQUEST", "\(query)")
            _ = try await api.database.store.schemas.deploySchema(container: Self.container)
            #expect(await prod("create", "p1", "Widget", #"{"name":{"value":"prod"},"count":{"value":1},"ints":{"value":[4]}}"#) == ["ok"])
            #expect(await prod("forceUpdate", "p2", "Widget", #"{"name":{"value":"x"},"extra":{"value":"new"}}"#) == ["BAD_REQUEST"], "an undeployed field")
            #expect(await prod("forceUpdate", "p3", "Doohickey", #"{"name":{"value":"x"}}"#) == ["BAD_REQUEST"], "an undeployed type")
            #expect(await prod("forceUpdate", "p4", "Widget", #"{"count":{"value":"x"}}"#) == ["BAD_REQUEST"], "a wrong value")
            let widgets = await api.database("records/query", token: token, #"{"query":{"recordType":"Widget"}}"#, container: Self.container, environment: "production")
            #expect(widgets.names == ["p1"], "development's records show in production: \(widgets)")
            #expect(await Self.save(api, token, "forceUpdate", "w4", "Widget", #"{"extra":{"value":"dev"}}"#).codes == ["ok"])
            #expect(await prod("forceUpdate", "p2", "Widget", #"{"extra":{"value":"new"}}"#) == ["BAD_REQUEST"], "a field not yet deployed")
            _ = try await api.database.store.schemas.deploySchema(container: Self.container)
            #expect(await prod("forceUpdate", "p2", "Widget", #"{"extra":{"value":"new"}}"#) == ["ok"])
        }
    }

    @Test(arguments: ["development", "production"])
    func appendOnlyEventsAllowCreateRetryAndDeleteButNoUpdate(environment: String) async throws {
        try await APIFixture.with { api in
            try await api.importSchema("applocker.json")
            let token = try await api.token()
            let container = "iCloud.com.mirxa.AppLocker"
            func save(_ kind: String, _ name: String, _ type: String, _ fields: String, tag: String? = nil) async -> Answer {
                await Self.save(api, token, kind, name, type, fields, tag: tag, container: container, environment: environment)
            }
            let ts = Int64(Date().timeIntervalSince1970 * 1000) - 60000
            let event = #"{"appName":{"value":"Safari"},"bundleID":{"value":"com.apple.Safari"},"deviceName":{"value":"mac"},"timestamp":{"value":\#(ts)}}"#
            let created = await save("create", "e1", "BlockedAppEvent", event)
            let tag = try #require(created.tag("e1"), "\(created)")
            #expect(await save("create", "e1", "BlockedAppEvent", event).tag("e1") == tag, "the create retry changed the tag")
            let changes = { (sync: String?) in await api.database("records/changes", token: token, #"{"zoneID":{"zoneName":"_defaultZone"}\#(sync.map { #","syncToken":"\#($0)""# } ?? "")}"#,
                                                                  container: container, environment: environment) }
            let feedToken = try #require(await changes(nil).syncToken)
            #expect(await save("create", "e1", "BlockedAppEvent", event).codes == ["ok"])
            #expect(await changes(feedToken).summary.isEmpty, "a create retry added to the change feed")
            for kind in ["update", "replace"] {
                let refused = await save(kind, "e1", "BlockedAppEvent", #"{"appName":{"value":"Mail"}}"#, tag: tag)
                #expect(refused.codes == ["ACCESS_DENIED"] && refused.records.first?.isErrorBody == true, "\(kind): \(refused)")
            }
            for kind in ["forceUpdate", "forceReplace"] {
                #expect(await save(kind, "e1", "BlockedAppEvent", #"{"appName":{"value":"Mail"}}"#).codes == ["ACCESS_DENIED"], "\(kind)")
            }
            #expect(await save("create", "e1", "BlockedAppEvent", #"{"appName":{"value":"Mail"}}"#).codes == ["EXISTS"])
            #expect(await save("forceUpdate", "e2", "BlockedAppEvent", event).codes == ["ok"], "forceUpdate creating a missing event")
            #expect(await save("update", "e3", "BlockedAppEvent", event, tag: "1").codes == ["NOT_FOUND"])
            let kept = await api.lookup(token, ["e1"], container: container, environment: environment)
            #expect(kept.tag("e1") == tag && kept.value("e1", "appName") == .string("Safari"), "a refused update changed the event: \(kept)")
            #expect(await api.modify(token, [Op.delete("e1", tag: tag), Op.delete("e2")], container: container, environment: environment).codes == ["ok", "ok"])
            #expect(await save("create", "e4", "BlockedAppEvent", #"{"appName":{"value":7}}"#).codes == ["BAD_REQUEST"])
            let reason = Self.reason(await save("create", "e5", "BlockedAppEvent", #"{"appName":{"value":"x"},"timestamp":{"value":"yesterday"}}"#))
            for word in ["e5", "timestamp", "TIMESTAMP", "string"] { #expect(reason.contains(word), "reason '\(reason)' does not name \(word)") }
            // LockedAppList is not append-only; "value": null removes a field.
            _ = await save("forceUpdate", "locked-mac", "LockedAppList", #"{"deviceName":{"value":"mac"}}"#)
            let update = await save("forceUpdate", "locked-mac", "LockedAppList", #"{"updatedAt":{"value":1}}"#)
            #expect(update.codes == ["ok"] && update.value("locked-mac", "deviceName") == .string("mac"), "forceUpdate dropped a field it did not send: \(update)")
            let removed = await save("forceUpdate", "locked-mac", "LockedAppList", #"{"deviceName":{"value":null}}"#)
            #expect(removed.codes == ["ok"] && removed.recordItem("locked-mac")?["fields"]?["deviceName"] == nil, "\(removed)")
            #expect(removed.value("locked-mac", "updatedAt") == .integer(1))
        }
    }

    @Test func anImportedSchemaReadsBackAsImportedAndRefusesATypeChange() async throws {
        try await APIFixture.with { api in
            try await api.importSchema("applocker.json")
            let container = "iCloud.com.mirxa.AppLocker"
            let shown = try await api.schemaText(container)
            for part in [#""container":"iCloud.com.mirxa.AppLocker""#,
                         #""BlockedAppEvent":{"appendOnly":true,"fields":{"appName":"STRING","bundleID":"STRING","deviceName":"STRING","timestamp":"TIMESTAMP"},"retention":{"days":30,"field":"timestamp"}}"#,
                         #""photoAsset":"ASSETID""#, #""LockedAppList":{"fields":{"apps":"ASSETID","deviceName":"STRING","updatedAt":"TIMESTAMP"}}"#, #""retention":{"days":7,"field":"timestamp"}"#] {
                #expect(shown.contains(part), "the schema lacks \(part): \(shown)")
            }
            #expect(try await api.schemaText(container, environment: .production) == shown)
            let schemas = api.database.store.schemas
            let reimport = try ContainerSchema.parseFile(try JSONValue.parse(Array(shown.utf8)))
            try await schemas.importSchema(reimport, environment: .development)
            #expect(try await api.schemaText(container) == shown, "re-importing the schema as read changed it")
            let conflicting = try ContainerSchema.parseFile(try JSONValue.parse(Array(shown.replacingOccurrences(of: #""appName":"STRING""#, with: #""appName":"INT64""#).utf8)))
            do {
                try await schemas.importSchema(conflicting, environment: .development)
                Issue.record("importing appName as INT64 over STRING succeeded")
            } catch {
                #expect("\(error)".contains("appName"), "the refusal does not name the field: \(error)")
            }
            #expect(try await api.schemaText(container) == shown, "a refused import changed the schema")
        }
    }
}
