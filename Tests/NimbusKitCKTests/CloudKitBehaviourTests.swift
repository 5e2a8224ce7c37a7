import Foundation
import Testing
@testable import NimbusKit
@testable import NimbusKitCK

/// CloudKit's signatures and behaviour against the real server: the sample-style code of
/// CloudKitSampleCode.swift run as two devices, and the async API's zones, lookups and conflicts.
@Suite("NimbusKitCK against the server", .serialized)
struct CloudKitBehaviourTests {
    func wait(_ body: (@escaping ((any Error)?) -> Void) -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            body { error in if let error { continuation.resume(throwing: error) } else { continuation.resume() } }
        }
    }

    func wait<T: Sendable>(_ body: (@escaping (Result<T, any Error>) -> Void) -> Void) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in body { continuation.resume(with: $0) } }
    }

    @Test func sampleCodeSyncsTwoDevicesThroughOperations() async throws {
        let server = try LiveServer.start()
        defer { server.stop() }
        let mac = ContactsSync(container: CKContainer(identifier: LiveServer.container,
                                                      configuration: try server.configuration(user: "ann", device: "mac")))
        let phone = ContactsSync(container: CKContainer(identifier: LiveServer.container,
                                                        configuration: try server.configuration(user: "ann", device: "phone")))
        try await wait { mac.createZoneIfNeeded(completionHandler: $0) }
        try await wait { mac.subscribeToChanges(completionHandler: $0) }
        let zones = try await mac.database.allRecordZones().map(\.zoneID.zoneName)
        #expect(zones.contains("Contacts") && zones.contains(CKRecordZone.ID.defaultZoneName))

        let names = ["Ada", "Bea", "Cy", "Dee", "Eve"]
        let records = names.map { name -> CKRecord in
            let record = CKRecord(recordType: ContactsSync.contactType, recordID: CKRecord.ID(recordName: "c-\(name)", zoneID: mac.zone.zoneID))
            record.setValuesForKeys([ContactsSync.nameKey: name, "age": 30])
            return record
        }
        let saved: [CKRecord] = try await wait { mac.save(records, completionHandler: $0) }
        #expect(saved.count == 5 && saved.allSatisfy { $0.recordChangeTag != nil })

        let changedZones: [CKRecordZone.ID] = try await wait { phone.fetchDatabaseChanges(completionHandler: $0) }
        #expect(changedZones.map(\.zoneName).contains("Contacts"))
        try await wait { phone.fetchZoneChanges(completionHandler: $0) }
        #expect(phone.contacts.count == 5)
        let listed: [CKRecord] = try await wait { mac.fetchAllContacts(completionHandler: $0) }
        #expect(listed.compactMap { $0[ContactsSync.nameKey] as? String } == names, "query pages of 2 through cursors, sorted")

        // The phone edits Ada from its fetched copy; the Mac edits its older copy: the Mac's save
        // meets serverRecordChanged, takes the server record and saves its name onto it.
        let adaID = CKRecord.ID(recordName: "c-Ada", zoneID: mac.zone.zoneID)
        let phoneAda = try #require(phone.contacts[adaID])
        phoneAda["age"] = 31
        _ = try await wait { phone.save([phoneAda], completionHandler: $0) } as [CKRecord]
        let macAda = try #require(mac.contacts[adaID])
        macAda[ContactsSync.nameKey] = "Ada L."
        _ = try await wait { mac.save([macAda], completionHandler: $0) } as [CKRecord]
        let final = try await mac.database.record(for: adaID)
        #expect(final[ContactsSync.nameKey] as? String == "Ada L.")
        #expect(final["age"] as? Int == 31, "the phone's edit survives the Mac's conflict handling")

        // Only what changed since the archived token comes back.
        try await mac.database.deleteRecord(withID: CKRecord.ID(recordName: "c-Eve", zoneID: mac.zone.zoneID))
        try await wait { phone.fetchZoneChanges(completionHandler: $0) }
        #expect(phone.deletedIDs.map(\.recordName) == ["c-Eve"])
        #expect(phone.contacts[adaID]?[ContactsSync.nameKey] as? String == "Ada L.")
        #expect(phone.contacts.count == 4)
        let subscriptions = try await phone.database.allSubscriptions()
        #expect(subscriptions.count == 1 && subscriptions.first is CKDatabaseSubscription)
    }

    @Test func aCreateOverAnExistingNameIsServerRecordChangedWithTheServerRecord() async throws {
        let server = try LiveServer.start()
        defer { server.stop() }
        let database = CKContainer(identifier: LiveServer.container, configuration: try server.configuration(user: "bo", device: "mac"))
            .privateCloudDatabase
        let first = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "settings"))
        first["text"] = "first"
        _ = try await database.save(first)
        let second = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "settings"))
        second["text"] = "second"
        do {
            _ = try await database.save(second)
            Issue.record("a create over an existing name succeeded")
        } catch CKError.serverRecordChanged {
            // CloudKit's pattern match works on the error.
        }
        do {
            _ = try await database.save(second)
        } catch let error as CKError {
            #expect(error.code == .serverRecordChanged)
            #expect(error.serverRecord?["text"] as? String == "first")
            #expect(error.serverRecord?.recordChangeTag != nil)
            #expect(error.clientRecord?["text"] as? String == "second")
        }
        let (saveResults, _) = try await database.modifyRecords(saving: [second], deleting: [])
        guard case .failure(let error as CKError) = saveResults[second.recordID] else {
            Issue.record("modifyRecords did not fail the create")
            return
        }
        #expect(error.code == .serverRecordChanged && error.serverRecord?["text"] as? String == "first")
        // The standard handler: take the server record, apply our change, save.
        let server2 = try #require(error.serverRecord)
        server2["text"] = "second"
        #expect(try await database.save(server2)["text"] as? String == "second")
    }

    @Test func systemFieldsAndTokensArchiveWithSecureCoding() async throws {
        let server = try LiveServer.start()
        defer { server.stop() }
        let database = CKContainer(identifier: LiveServer.container, configuration: try server.configuration(user: "cy", device: "mac"))
            .privateCloudDatabase
        let record = CKRecord(recordType: "Note")
        record["text"] = "v1"
        record.parent = CKRecord.Reference(recordID: CKRecord.ID(recordName: "folder"), action: .none)
        let saved = try await database.save(record)
        let archive = ContactsSync.systemFields(of: saved)
        // "Relaunch": only the archive survives.
        let restored = try #require(ContactsSync.record(fromSystemFields: archive))
        #expect(restored.recordID == saved.recordID && restored.recordType == "Note")
        #expect(restored.recordChangeTag == saved.recordChangeTag && restored.allKeys().isEmpty)
        #expect(restored.parent?.recordID.recordName == "folder")
        let copy = try #require(saved.copy() as? CKRecord)
        #expect(copy !== saved && copy.recordChangeTag == saved.recordChangeTag && copy["text"] as? String == "v1")
        let empty = NSKeyedArchiver(requiringSecureCoding: true)
        empty.finishEncoding()
        #expect(ContactsSync.record(fromSystemFields: empty.encodedData) == nil, "an archive without system fields is nil, not a crash")
        restored["text"] = "v2"
        let updated = try await database.save(restored)
        #expect(updated["text"] as? String == "v2" && updated.recordChangeTag != saved.recordChangeTag)
        // The stale archive is now a conflict, as in CloudKit.
        let stale = try #require(ContactsSync.record(fromSystemFields: archive))
        stale["text"] = "v3"
        await #expect(throws: CKError.self) { try await database.save(stale) }

        let changes = try await database.recordZoneChanges(inZoneWith: .default, since: nil)
        let data = try ContactsSync.archive(changes.changeToken)
        let token = try #require(ContactsSync.unarchiveToken(data))
        #expect(token == changes.changeToken)
        let next = try await database.recordZoneChanges(inZoneWith: .default, since: token)
        #expect(next.modificationResultsByID.isEmpty, "the unarchived token resumes where the archived one left off")
    }

    @Test func zonesLookupsAndDatabaseChangesAsync() async throws {
        let server = try LiveServer.start()
        defer { server.stop() }
        let container = CKContainer(identifier: LiveServer.container, configuration: try server.configuration(user: "di", device: "mac"))
        let database = container.database(with: .private)
        #expect(try await container.userRecordID().recordName.isEmpty == false)
        let start = try await database.databaseChanges(since: nil)
        let zone = try await database.save(CKRecordZone(zoneName: "Work"))
        #expect(try await database.recordZone(for: zone.zoneID).zoneID.zoneName == "Work")
        let record = CKRecord(recordType: "Task", recordID: CKRecord.ID(recordName: "t1", zoneID: zone.zoneID))
        record["title"] = "write"
        _ = try await database.save(record)
        let changes = try await database.databaseChanges(since: start.changeToken)
        #expect(changes.modifications.map(\.zoneID.zoneName).contains("Work"))
        let missing = CKRecord.ID(recordName: "nope", zoneID: zone.zoneID)
        let fetched = try await database.records(for: [record.recordID, missing], desiredKeys: ["title"])
        #expect(try fetched[record.recordID]?.get()["title"] as? String == "write")
        if case .failure(let error as CKError)? = fetched[missing] { #expect(error.code == .unknownItem) } else { Issue.record("no unknownItem") }
        try await database.deleteRecordZone(withID: zone.zoneID)
        do {
            _ = try await database.recordZone(for: zone.zoneID)
            Issue.record("a deleted zone was found")
        } catch let error as CKError {
            #expect(error.code == .zoneNotFound)
        }
        let after = try await database.databaseChanges(since: changes.changeToken)
        #expect(after.deletions.map(\.zoneID.zoneName) == ["Work"])
        await #expect(throws: CKError.self) { try await container.publicCloudDatabase.record(for: record.recordID) }
    }

    @Test func listAndNegatedPredicatesRunOnTheServer() async throws {
        let server = try LiveServer.start()
        defer { server.stop() }
        let database = CKContainer(identifier: LiveServer.container, configuration: try server.configuration(user: "ed", device: "mac"))
            .privateCloudDatabase
        for (name, tags) in [("a", ["work", "home"]), ("b", ["home"]), ("c", ["work"])] {
            let record = CKRecord(recordType: "Item", recordID: CKRecord.ID(recordName: name))
            record["name"] = name
            record["tags"] = tags
            _ = try await database.save(record)
        }
        func names(_ format: String, _ arguments: [Any]) async throws -> [String] {
            let query = CKQuery(recordType: "Item", predicate: NSPredicate(format: format, argumentArray: arguments))
            query.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
            return try await database.records(matching: query).matchResults.compactMap { try? $0.1.get()["name"] as? String }
        }
        #expect(try await names("tags CONTAINS %@", ["work"]) == ["a", "c"])
        #expect(try await names("ANY tags == %@", ["home"]) == ["a", "b"])
        #expect(try await names("NOT (name IN %@)", [["a", "b"]]) == ["c"])
    }

    @Test func integerArgumentsAgainstADoubleFieldAreWidened() async throws {
        let server = try LiveServer.start()
        defer { server.stop() }
        let database = CKContainer(identifier: LiveServer.container, configuration: try server.configuration(user: "fa", device: "mac"))
            .privateCloudDatabase
        for (name, duration) in [("short", 12.5), ("long", 90.0)] {
            let record = CKRecord(recordType: "SessionConfiguration", recordID: CKRecord.ID(recordName: name))
            record["name"] = name
            record["duration"] = duration
            _ = try await database.save(record)
        }
        func names(_ format: String, _ arguments: [Any] = []) async throws -> [String] {
            let predicate = NSPredicate(format: format, argumentArray: arguments)
            return try await database.records(matching: CKQuery(recordType: "SessionConfiguration", predicate: predicate))
                .matchResults.compactMap { try? $0.1.get()["name"] as? String }
        }
        #expect(try await names("duration > %d", [30]) == ["long"])
        #expect(try await names("duration < 30") == ["short"])
        #expect(try await names("duration IN %@", [[90]]) == ["long"])
        let subscription = CKQuerySubscription(recordType: "SessionConfiguration", predicate: NSPredicate(format: "duration >= %@", NSNumber(value: 60)),
                                               subscriptionID: "long-sessions", options: [.firesOnRecordCreation])
        _ = try await database.save(subscription)
        let fetched = try await database.subscription(for: "long-sessions")
        #expect((fetched as? CKQuerySubscription)?.filters.first?.typedBySchema == true, "an untyped value comes back untyped")
    }

    @Test func zonesAndSubscriptionsAreFetchedThroughOperations() async throws {
        let server = try LiveServer.start()
        defer { server.stop() }
        let database = CKContainer(identifier: LiveServer.container, configuration: try server.configuration(user: "gu", device: "mac"))
            .privateCloudDatabase
        _ = try await database.modifyRecordZones(saving: [CKRecordZone(zoneName: "A"), CKRecordZone(zoneName: "B")], deleting: [])
        _ = try await database.modifySubscriptions(saving: [CKDatabaseSubscription(subscriptionID: "all"),
                                                            CKRecordZoneSubscription(zoneID: CKRecordZone.ID(zoneName: "A"), subscriptionID: "a")],
                                                   deleting: [])
        let everyZone = CKFetchRecordZonesOperation.fetchAllRecordZonesOperation()
        var seen: [String] = []
        everyZone.perRecordZoneResultBlock = { id, result in if case .success = result { seen.append(id.zoneName) } }
        let zones: [CKRecordZone.ID: CKRecordZone] = try await wait { done in
            everyZone.fetchRecordZonesCompletionBlock = { zones, error in done(zones.map { .success($0) } ?? .failure(error ?? CKError(.internalError))) }
            database.add(everyZone)
        }
        #expect(Set(zones.keys.map(\.zoneName)) == ["_defaultZone", "A", "B"] && Set(seen) == Set(zones.keys.map(\.zoneName)))

        let someZones = CKFetchRecordZonesOperation(recordZoneIDs: [CKRecordZone.ID(zoneName: "A"), CKRecordZone.ID(zoneName: "Nope")])
        var missing: CKError?
        someZones.perRecordZoneResultBlock = { id, result in if case .failure(let error) = result, id.zoneName == "Nope" { missing = error as? CKError } }
        let outcome: Void? = try? await wait { done in someZones.fetchRecordZonesResultBlock = { done($0) }; database.add(someZones) }
        #expect(outcome == nil && missing?.code == .zoneNotFound, "a missing zone fails its item and the operation (partialFailure)")

        let everySubscription = CKFetchSubscriptionsOperation.fetchAllSubscriptionsOperation()
        let subscriptions: [CKSubscription.ID: CKSubscription] = try await wait { done in
            everySubscription.fetchSubscriptionCompletionBlock = { found, error in
                done(found.map { .success($0) } ?? .failure(error ?? CKError(.internalError)))
            }
            database.add(everySubscription)
        }
        #expect(Set(subscriptions.keys) == ["all", "a"] && subscriptions["a"] is CKRecordZoneSubscription)
        let one = CKFetchSubscriptionsOperation(subscriptionIDs: ["a", "gone"])
        var results: [CKSubscription.ID: Bool] = [:]
        one.perSubscriptionResultBlock = { id, result in results[id] = (try? result.get()) != nil }
        let failed: Void? = try? await wait { done in one.fetchSubscriptionsResultBlock = { done($0) }; database.add(one) }
        #expect(failed == nil && results == ["a": true, "gone": false])
    }
}
