@testable import NimbusAPI
import NimbusCore
import NimbusStore
import NimbusSupport
import Testing

/// Request bodies decoded once into typed requests (no database).
@Suite struct DatabaseRequestTests {
    private let limits = Limits()

    private func body(_ text: String) throws -> JSONValue { try JSONValue.parse(Array(text.utf8)) }

    private func refusal<R: DatabaseRequest>(_ type: R.Type, _ text: String, limits: Limits = Limits()) throws -> SyncError? {
        do {
            _ = try R.decode(Array(text.utf8), limits: limits)
            return nil
        } catch let error as SyncError {
            return error
        }
    }

    @Test func modifyDecodesZoneAtomicAndOperationsSharingDesiredKeys() throws {
        let request = try ModifyRecordsRequest.decode(Array("""
            {"zoneID":{"zoneName":"Work"},"atomic":true,"desiredKeys":["a"],"operations":[
             {"operationType":"create","record":{"recordName":"n1","recordType":"Note","fields":{"a":{"value":1}}}},
             {"operationType":"create","record":{"recordType":"Note","fields":{}}},
             {"operationType":"bogus","record":{"recordName":"n3"}}]}
            """.utf8), limits: limits)
        #expect(request.zoneName == "Work")
        #expect(request.atomic)
        #expect(request.operations.count == 3)
        let first = try request.operations[0].get()
        #expect(first.recordName == "n1" && first.desiredKeys == ["a"])
        let second = try request.operations[1].get()
        #expect(!second.recordName.isEmpty, "a record without a name gets one")
        guard case .failure(let error) = request.operations[2] else { Issue.record("a bad operationType parsed"); return }
        #expect(error.code == .badRequest)
        #expect(request.desiredKeysByName["n1"] == .some(["a"]))
    }

    @Test func modifyRefusesWhatCannotBeCarriedOut() throws {
        #expect(try refusal(ModifyRecordsRequest.self, "{}")?.reason.contains("operations") == true)
        #expect(try refusal(ModifyRecordsRequest.self, #"{"operations":[],"atomic":"yes"}"#)?.reason == "atomic must be true or false.")
        #expect(try refusal(ModifyRecordsRequest.self, #"{"operations":[],"desiredKeys":"a"}"#)?.code == .badRequest)
        let twice = #"{"operations":[{"operationType":"create","record":{"recordName":"x","recordType":"T","fields":{}}},{"operationType":"create","record":{"recordName":"x","recordType":"T","fields":{}}}]}"#
        let repeated = try refusal(ModifyRecordsRequest.self, twice)
        #expect(repeated?.reason.contains("more than one operation") == true, "\(String(describing: repeated))")
        var small = Limits()
        small.maxOperationsPerRequest = 1
        let two = #"{"operations":[{"operationType":"delete","record":{"recordName":"a"}},{"operationType":"delete","record":{"recordName":"b"}}]}"#
        #expect(try refusal(ModifyRecordsRequest.self, two, limits: small)?.code == .limitExceeded)
        let one = #"{"operations":[{"operationType":"delete","record":{"recordName":"a"}}]}"#
        #expect(try refusal(ModifyRecordsRequest.self, one, limits: small) == nil, "exactly the limit passes")
    }

    @Test func aRecordZoneContradictingTheRequestsFailsAlone() throws {
        let request = try ModifyRecordsRequest.decode(Array("""
            {"zoneID":{"zoneName":"Work"},"operations":[
             {"operationType":"create","record":{"recordName":"a","recordType":"T","zoneID":{"zoneName":"_defaultZone"}}},
             {"operationType":"create","record":{"recordName":"b","recordType":"T","zoneID":{"zoneName":"Work"}}}]}
            """.utf8), limits: limits)
        guard case .failure(let error) = request.operations[0] else { Issue.record("the contradiction passed"); return }
        #expect(error.reason.contains("names zone _defaultZone, but the request is for zone Work"))
        #expect((try? request.operations[1].get()) != nil)
    }

    @Test func lookupKeepsInvalidNamesInPlace() throws {
        let request = try LookupRecordsRequest(body: body(#"{"records":[{"recordName":"a"},{"recordName":""},{"recordName":"b"}]}"#), limits: limits)
        #expect(request.zoneName == Names.defaultZone)
        #expect(request.names == [.valid("a"), .invalid(""), .valid("b")])
        #expect(request.validNames == ["a", "b"])
        #expect(try refusal(LookupRecordsRequest.self, #"{"records":[{"name":"a"}]}"#)?.reason.contains("recordName") == true)
    }

    @Test func changesNeedAZoneAndBoundTheirNumbers() throws {
        let request = try RecordChangesRequest(body: body("""
            {"zoneID":{"zoneName":"Z"},"syncToken":"t","resultsLimit":5,"wait":3,"desiredRecordTypes":["Note"]}
            """), limits: limits)
        #expect(request.zoneName == "Z" && request.syncToken == "t" && request.resultsLimit == 5 && request.wait == 3)
        #expect(request.desiredRecordTypes == ["Note"] && request.desiredKeys == nil)
        #expect(try refusal(RecordChangesRequest.self, "{}")?.reason == "This operation needs zoneID.")
        let zone = #""zoneID":{"zoneName":"Z"}"#
        #expect(try refusal(RecordChangesRequest.self, "{\(zone),\"wait\":\(limits.maxWaitSeconds)}") == nil)
        #expect(try refusal(RecordChangesRequest.self, "{\(zone),\"wait\":\(limits.maxWaitSeconds + 1)}")?.code == .badRequest)
        #expect(try refusal(RecordChangesRequest.self, "{\(zone),\"wait\":1.5}")?.code == .badRequest)
        #expect(try refusal(RecordChangesRequest.self, "{\(zone),\"syncToken\":\"\"}")?.reason
            == "syncToken must be a token string from an earlier answer; leave it out to fetch again without a token.")
        #expect(try refusal(RecordChangesRequest.self, "{\(zone),\"desiredRecordTypes\":[\"no spaces\"]}")?.code == .badRequest)
    }

    @Test func zoneModifyRefusesBadEntriesOneByOne() throws {
        let request = try ModifyZonesRequest(body: body("""
            {"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"A"}}},
             {"operationType":"delete","zone":{"zoneName":"_defaultZone"}},
             {"operationType":"create","zone":{"zoneName":"_private"}},
             {"operationType":"rename","zone":{"zoneName":"B"}},
             {"operationType":"delete","zone":{"zoneName":"B"}}]}
            """), limits: limits)
        let reasons: [String] = request.entries.map { entry in
            switch entry {
            case .run(.create(let name)): "create \(name)"
            case .run(.delete(let name)): "delete \(name)"
            case .refused(let name, let error): "\(name): \(error.reason)"
            }
        }
        #expect(reasons == ["create A", "_defaultZone: The default zone cannot be deleted.", "_private: Zone names starting with '_' are reserved.",
                            "B: operationType must be create or delete.", "delete B"])
        #expect(request.operations.count == 2)
        let lookup = try LookupZonesRequest(body: body(#"{"zones":[{"zoneName":"A"},{"zoneID":{"zoneName":"B"}}]}"#), limits: limits)
        #expect(lookup.names == ["A", "B"])
    }

    @Test func subscriptionDeletesAreDecodedAndSavesWaitForTheSchema() throws {
        let request = try ModifySubscriptionsRequest(body: body("""
            {"operations":[{"operationType":"delete","subscription":{"subscriptionID":"s1"}},
             {"operationType":"delete","subscription":{}},
             {"operationType":"create","subscription":{"subscriptionID":"s2","subscriptionType":"zone","zoneID":{"zoneName":"_defaultZone"}}},
             {"operationType":"merge","subscription":{"subscriptionID":"s3"}}]}
            """), limits: limits)
        let entries = request.entries(schema: [:])
        #expect(entries.count == 4)
        guard case .run(.delete("s1")) = entries[0] else { Issue.record("\(entries[0])"); return }
        guard case .refused(_, let missing) = entries[1] else { Issue.record("\(entries[1])"); return }
        #expect(missing.reason.contains("subscriptionID"))
        guard case .run(.save(let saved, mustExist: false)) = entries[2] else { Issue.record("\(entries[2])"); return }
        #expect(saved.id == "s2")
        guard case .refused("s3", _) = entries[3] else { Issue.record("\(entries[3])"); return }
    }

    @Test func assetUploadsNameTheirFieldsAndStayUnderTheirLimit() throws {
        let request = try AssetUploadsRequest(body: body(#"{"tokens":[{"recordType":"Note","fieldName":"photo","recordName":"n1"},{"recordType":"Note","fieldName":"p"}]}"#),
                                              limits: limits)
        #expect(request.uploads.first == .init(recordType: "Note", fieldName: "photo", recordName: "n1"))
        #expect(request.uploads.count == 2 && !request.uploads[1].recordName.isEmpty)
        var small = Limits()
        small.maxAssetTokensPerRequest = 1
        #expect(try refusal(AssetUploadsRequest.self, #"{"tokens":[{"recordType":"N","fieldName":"a"},{"recordType":"N","fieldName":"b"}]}"#, limits: small)?.code == .limitExceeded)
        #expect(try refusal(AssetUploadsRequest.self, #"{"tokens":[{"recordType":"N"}]}"#)?.code == .badRequest)
    }
}
