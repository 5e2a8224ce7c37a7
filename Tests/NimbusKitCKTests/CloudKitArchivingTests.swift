import Foundation
import Testing
@testable import NimbusKit
@testable import NimbusKitCK

/// CloudKit's identities, zones, subscriptions and cursors archive as apps archive them
/// (`NSKeyedArchiver(requiringSecureCoding: true)`, `unarchivedObject(ofClass:from:)`), and the
/// predicate rules CloudKit has: only AND, no full-text `self CONTAINS` here, integers widened.
@Suite("NimbusKitCK archives and predicate rules")
struct CloudKitArchivingTests {
    func roundTrip<T: NSObject & NSSecureCoding>(_ object: T) throws -> T? {
        let data = try NSKeyedArchiver.archivedData(withRootObject: object, requiringSecureCoding: true)
        return try NSKeyedUnarchiver.unarchivedObject(ofClass: T.self, from: data)
    }

    @Test func recordAndZoneIdentitiesRoundTrip() throws {
        let zoneID = CKRecordZone.ID(zoneName: "Contacts", ownerName: CKCurrentUserDefaultName)
        let back = try #require(try roundTrip(zoneID))
        #expect(back == zoneID && back.zoneName == "Contacts" && back.ownerName == CKCurrentUserDefaultName)

        let recordID = CKRecord.ID(recordName: "ada", zoneID: zoneID)
        let recordBack = try #require(try roundTrip(recordID))
        #expect(recordBack == recordID && recordBack.recordName == "ada" && recordBack.zoneID.zoneName == "Contacts")
        #expect(try roundTrip(CKRecord.ID(recordName: "d"))?.zoneID == CKRecordZone.ID.default)

        let zone = CKRecordZone(zoneName: "Contacts")
        let zoneBack = try #require(try roundTrip(zone))
        #expect(zoneBack.zoneID == zoneID && zoneBack == zone)
        #expect(CKRecordZone.supportsSecureCoding && CKRecord.ID.supportsSecureCoding && CKQueryOperation.Cursor.supportsSecureCoding)
    }

    @Test func subscriptionsRoundTripAsTheirOwnClass() throws {
        let query = CKQuerySubscription(recordType: "Contact", predicate: NSPredicate(format: "age > %d AND name BEGINSWITH %@", 30, "A"),
                                        subscriptionID: "adults", options: [.firesOnRecordCreation, .firesOnRecordUpdate])
        query.zoneID = CKRecordZone.ID(zoneName: "Contacts")
        query.filters = [.equals("kind", "friend")]
        let info = CKSubscription.NotificationInfo()
        info.title = "New contact"
        info.shouldSendContentAvailable = true
        info.desiredKeys = ["name"]
        info.category = "contacts"
        query.notificationInfo = info
        let back = try #require(try roundTrip(query as CKSubscription) as? CKQuerySubscription)
        #expect(back.subscriptionID == "adults" && back.recordType == "Contact")
        #expect(back.querySubscriptionOptions == [.firesOnRecordCreation, .firesOnRecordUpdate])
        #expect(back.zoneID?.zoneName == "Contacts" && back.filters == [.equals("kind", "friend")])
        #expect(try back.nimbusSubscription() == query.nimbusSubscription(), "the same subscription is saved from the archive")
        #expect(back.notificationInfo?.title == "New contact" && back.notificationInfo?.shouldSendContentAvailable == true)
        #expect(back.notificationInfo?.desiredKeys == ["name"] && back.notificationInfo?.category == "contacts")

        let zone = try #require(try roundTrip(CKRecordZoneSubscription(zoneID: CKRecordZone.ID(zoneName: "Z"), subscriptionID: "z") as CKSubscription))
        #expect((zone as? CKRecordZoneSubscription)?.zoneID.zoneName == "Z" && zone.subscriptionID == "z" && zone.notificationInfo == nil)
        let database = try #require(try roundTrip(CKDatabaseSubscription(subscriptionID: "db") as CKSubscription))
        #expect(database is CKDatabaseSubscription && database.subscriptionID == "db")
        #expect(try roundTrip(info)?.category == "contacts")
    }

    @Test func aWholeRecordAndAReferenceRoundTrip() throws {
        var stored = Record(recordType: "Contact", id: RecordID(recordName: "ada", zoneID: ZoneID("Contacts")))
        stored.changeTag = "tag-7"
        let record = CKRecord(record: stored)
        record["name"] = "Ada"
        record["age"] = 36
        record["tags"] = ["math", "engines"]
        record["friend"] = CKRecord.Reference(recordID: CKRecord.ID(recordName: "charles"), action: .deleteSelf)
        record.setParent(CKRecord.ID(recordName: "folder"))
        let back = try #require(try roundTrip(record))
        #expect(back.recordID == record.recordID && back.recordType == "Contact" && back.recordChangeTag == "tag-7")
        #expect(back["name"] as? String == "Ada" && (back["age"] as? NSNumber)?.intValue == 36 && back["tags"] as? [String] == ["math", "engines"])
        #expect((back["friend"] as? CKRecord.Reference)?.recordID.recordName == "charles" && back.parent?.recordID.recordName == "folder")
        #expect((record.copy() as? CKRecord)?["name"] as? String == "Ada", "copy() is NSObject's, through copy(with:)")

        let reference = CKRecord.Reference(recordID: CKRecord.ID(recordName: "x", zoneID: CKRecordZone.ID(zoneName: "Z")), action: .deleteSelf)
        let referenceBack = try #require(try roundTrip(reference))
        #expect(referenceBack == reference && referenceBack.action == .deleteSelf && referenceBack.recordID.zoneID.zoneName == "Z")
    }

    @Test func aQueryRoundTrips() throws {
        let query = CKQuery(recordType: "Session", predicate: NSPredicate(format: "duration > %d AND name BEGINSWITH %@", 30, "S"))
        query.sortDescriptors = [NSSortDescriptor(key: "duration", ascending: false)]
        query.filters = [.equals("kind", "focus")]
        let back = try #require(try roundTrip(query))
        #expect(try back.nimbusQuery() == query.nimbusQuery() && back.predicate.predicateFormat == query.predicate.predicateFormat)
    }

    @Test func aQueryCursorRoundTripsWithItsQuery() throws {
        var filter = Filter.greaterThan("duration", Int64(30))
        filter.typedBySchema = true
        let query = Query(recordType: "Session", filters: [filter, .in("tags", ["a", "b"])], sort: [.descending("duration")])
        let cursor = CKQueryOperation.Cursor(QueryCursor(marker: "m-123", query: query, zoneID: ZoneID("Sessions")))
        let back = try #require(try roundTrip(cursor))
        #expect(back.cursor == cursor.cursor && back == cursor)
    }

    @Test func orIsRefusedWithCloudKitsRule() throws {
        for format in ["a == 1 OR b == 2", "a == 1 || b == 2", "(a == 1 OR a == 2) AND b == 3", "a == 1 AND b == 2 or c == 3"] {
            do {
                _ = try NSPredicate(format: format).nimbusFilters()
                Issue.record("\(format) was accepted")
            } catch let error as CKError {
                #expect(error.code == .invalidArguments)
                #expect(error.underlying.reason.contains("Only AND compound predicates are allowed"), "\(format): \(error.underlying.reason)")
            } catch {
                Issue.record("not a CKError: \(error)")
            }
        }
        #expect(try NSPredicate(format: "(a == 1 AND b == 2) AND c == 3").nimbusFilters().count == 3, "AND groups still parse")
    }

    @Test func selfContainsIsRefusedWithWhatToWriteInstead() throws {
        do {
            _ = try NSPredicate(format: "self CONTAINS %@", "apple").nimbusFilters()
            Issue.record("self CONTAINS was accepted")
        } catch let error as CKError {
            #expect(error.code == .invalidArguments && error.underlying.reason.contains("allTokens()"))
        }
        let record = CKRecord(recordType: "Note")
        record["title"] = "Buy  apples\ttoday"
        record["tags"] = ["green fruit"]
        record["count"] = 3
        #expect(Set(record.allTokens()) == ["Buy", "apples", "today", "green", "fruit"])
    }

    @Test func integerArgumentsAreTypedByTheServersSchema() throws {
        let filters = try NSPredicate(format: "duration > %d AND ratio < %@ AND n IN %@ AND mixed IN %@ AND name == %@",
                                      30, NSNumber(value: 2), [1, 2], [1, 2.5] as [Any], "x").nimbusFilters()
        let wire = filters.map { $0.wireFilter()["fieldValue"]?.objectValue }
        let types = wire.map { $0?["type"]?.stringValue }
        #expect(types[0] == nil && types[1] == nil && types[2] == nil, "integers go untyped")
        #expect(wire[0]?["value"] == .integer(30) && filters.count == 5)
        #expect(types[3] == "DOUBLE_LIST", "integers among fractions are a DOUBLE list")
        #expect(types[4] == "STRING")
        #expect(try NSPredicate(format: "ratio > %f", 2.0).nimbusFilters().first?.typedBySchema == false)
        let probe = try #require(Issue32Probe.subscriptionsAndErrors()[0] as? CKQuerySubscription)
        #expect(try probe.nimbusSubscription().filters.count == 5, "the issue's predicate forms parse")
    }
}
