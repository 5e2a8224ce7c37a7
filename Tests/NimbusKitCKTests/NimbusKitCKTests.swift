import Foundation
import Testing
@testable import NimbusKit
@testable import NimbusKitCK

/// CloudKit's names over NimbusKit: predicates, sort descriptors, field values and errors.
@Suite("NimbusKitCK")
struct NimbusKitCKTests {
    /// An integer argument goes untyped, for the server to type from the field (widened against DOUBLE).
    func typedBySchema(_ filter: Filter) -> Filter {
        var filter = filter
        filter.typedBySchema = true
        return filter
    }

    @Test func predicateFormatsOfTheAppsBecomeFilters() throws {
        let date = Date(timeIntervalSince1970: 1_795_000_000)
        #expect(try NSPredicate(value: true).nimbusFilters().isEmpty)
        #expect(try NSPredicate(format: "TRUEPREDICATE").nimbusFilters().isEmpty)
        #expect(try NSPredicate(format: "timestamp < %@", date as any CVarArg).nimbusFilters() == [.lessThan("timestamp", date)])
        let operators: [(String, Filter.Comparator)] = [("<=", .lessThanOrEquals), (">", .greaterThan), (">=", .greaterThanOrEquals),
                                                        ("==", .equals), ("=", .equals), ("!=", .notEquals), ("<>", .notEquals)]
        for (symbol, comparator) in operators {
            #expect(try NSPredicate(format: "count \(symbol) %d", 5).nimbusFilters() == [typedBySchema(Filter("count", comparator, Int64(5)))], "\(symbol)")
        }
        #expect(try NSPredicate(format: "ratio > %f", 0.5).nimbusFilters() == [.greaterThan("ratio", 0.5)])
        #expect(try NSPredicate(format: "n == %ld", 7).nimbusFilters() == [typedBySchema(.equals("n", Int64(7)))])
        #expect(try NSPredicate(format: "appName == %@", "Safari").nimbusFilters() == [.equals("appName", "Safari")])
        #expect(try NSPredicate(format: "appName == 'Mail'").nimbusFilters() == [.equals("appName", "Mail")])
        #expect(try NSPredicate(format: "appName BEGINSWITH %@", "Sa").nimbusFilters() == [.beginsWith("appName", "Sa")])
        #expect(try NSPredicate(format: "bundleID IN %@", ["a", "b"]).nimbusFilters() == [.in("bundleID", ["a", "b"])])
        #expect(try NSPredicate(format: "timestamp >= %@ AND appName == %@", date as any CVarArg, "Safari").nimbusFilters()
            == [.greaterThanOrEquals("timestamp", date), .equals("appName", "Safari")])
        #expect(try NSPredicate(format: "tags CONTAINS %@", "work").nimbusFilters() == [.listContains("tags", "work")])
        #expect(try NSPredicate(format: "ANY tags == %@", "work").nimbusFilters() == [.listContains("tags", "work")])
        #expect(try NSPredicate(format: "NOT (bundleID IN %@)", ["a"]).nimbusFilters() == [.notIn("bundleID", ["a"])])
        #expect(try NSPredicate(format: "(n > 1) AND NOT bundleID IN %@", ["a"]).nimbusFilters()
            == [typedBySchema(.greaterThan("n", Int64(1))), .notIn("bundleID", ["a"])])
        #expect(try NSPredicate(format: "timestamp < %@", Date(timeIntervalSince1970: 5) as NSDate).nimbusFilters()
            == [.lessThan("timestamp", Date(timeIntervalSince1970: 5))])
        #expect(try NSPredicate(format: "%K < %d && x == 1", "age", 3).nimbusFilters() == [typedBySchema(.lessThan("age", Int64(3))), typedBySchema(.equals("x", Int64(1)))])
    }

    @Test func predicatesOutsideTheSubsetAreInvalidArguments() {
        for (format, arguments) in [("a OR b", [Any]()), ("self CONTAINS %@", ["x"]), ("NOT a == 1", []), ("ANY a < 1", []), ("(a < 1", []), ("a < %@", []), ("a < %@", ["x", "y"]),
                                    ("a IN %@", ["x"]), ("a == 'unterminated", []), ("< 3", [])] as [(String, [Any])] {
            #expect(throws: CKError.self, "\(format)") { try NSPredicate(format: format, argumentArray: arguments).nimbusFilters() }
        }
        do {
            _ = try NSPredicate(format: "a OR b").nimbusFilters()
        } catch let error as CKError {
            #expect(error.code == .invalidArguments)
            #expect(error.underlying.reason.contains("Only AND compound predicates are allowed"))
        } catch {
            Issue.record("not a CKError: \(error)")
        }
    }

    @Test func queriesCarryTheirSortAndExtraFilters() throws {
        let query = CKQuery(recordType: "BlockedAppEvent", predicate: NSPredicate(value: true))
        query.sortDescriptors = [NSSortDescriptor(key: "timestamp", ascending: false)]
        query.filters = [.equals("deviceName", "mac")]
        let nimbus = try query.nimbusQuery()
        #expect(nimbus.recordType == "BlockedAppEvent")
        #expect(nimbus.sort == [.descending("timestamp")])
        #expect(nimbus.filters == [.equals("deviceName", "mac")])
    }

    @Test func recordValuesTravelBothWays() {
        let record = CKRecord(recordType: "Event")
        record["title"] = "Safari" as CKRecordValue
        record["count"] = 3 as CKRecordValue
        record["ratio"] = 0.25 as CKRecordValue
        record["flag"] = true as CKRecordValue
        let date = Date(timeIntervalSince1970: 1_795_000_000.5)
        record["timestamp"] = date as CKRecordValue
        record["blob"] = Data([1, 2]) as CKRecordValue
        record["tags"] = ["a", "b"] as CKRecordValue
        record["parent"] = CKRecord.Reference(recordID: CKRecord.ID(recordName: "p"), action: .deleteSelf)
        #expect(record.record.fields["title"] == .string("Safari"))
        #expect(record.record.fields["count"] == .int64(3))
        #expect(record.record.fields["ratio"] == .double(0.25))
        #expect(record.record.fields["flag"] == .int64(1))
        #expect(record.record.fields["tags"] == .strings(["a", "b"]))
        #expect(record.record.fields["parent"]?.referenceValue?.action == .deleteSelf)
        #expect(record["title"] as? String == "Safari")
        #expect(record["count"] as? Int == 3)
        #expect(record["count"] as? Int64 == 3)
        #expect(record["ratio"] as? Double == 0.25)
        #expect(record["timestamp"] as? Date == date)
        #expect(record["blob"] as? Data == Data([1, 2]))
        #expect(record["tags"] as? [String] == ["a", "b"])
        #expect((record["parent"] as? CKRecord.Reference)?.recordID.recordName == "p")
        record["title"] = nil
        #expect(record["title"] == nil)
        #expect(record.allKeys().contains("count"))
        #expect(record.recordChangeTag == nil)
        #expect(record.recordID.zoneID == CKRecordZone.ID.default)
        #expect(CKRecord.ID(recordName: "x") == CKRecord.ID(recordName: "x", zoneID: .default))
    }

    @Test func errorsMapToCloudKitCodes() {
        let cases: [(NimbusError.Code, CKError.Code)] = [
            (.serverRecordChanged, .serverRecordChanged), (.unknownItem, .unknownItem), (.zoneNotFound, .zoneNotFound),
            (.changeTokenExpired, .changeTokenExpired), (.requestRateLimited, .requestRateLimited),
            (.serviceUnavailable, .serviceUnavailable), (.limitExceeded, .limitExceeded), (.quotaExceeded, .quotaExceeded),
            (.notAuthenticated, .notAuthenticated), (.permissionFailure, .permissionFailure), (.invalidArguments, .invalidArguments),
            (.networkFailure, .networkFailure), (.constraintViolation, .constraintViolation), (.assetFileNotFound, .assetFileNotFound),
        ]
        for (nimbus, cloudKit) in cases {
            #expect(CKError(NimbusError(nimbus, reason: "r", retryAfter: 3)).code == cloudKit)
        }
        let server = Record.fromServer(id: RecordID(recordName: "r"), recordType: "T", fields: ["a": .int64(1)], changeTag: "9",
                                       created: nil, modified: nil)
        let conflict = CKError(NimbusError(.serverRecordChanged, reason: "stale", serverRecord: server))
        #expect(conflict.serverRecord?.recordChangeTag == "9")
        #expect(CKError(NimbusError(.requestRateLimited, reason: "r", retryAfter: 3)).retryAfterSeconds == 3)
    }

    @Test func withoutAServerOperationsSayHowToConfigureOne() async {
        let database = CKDatabase(container: nil)
        do {
            _ = try await database.record(for: CKRecord.ID(recordName: "x"))
            Issue.record("an unconfigured database answered")
        } catch let error as CKError {
            #expect(error.code == .notAuthenticated)
            #expect(error.underlying.reason.contains("NIMBUS_URL"))
        } catch {
            Issue.record("not a CKError: \(error)")
        }
    }
}
