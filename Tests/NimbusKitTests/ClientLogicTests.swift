import Foundation
import Testing
@testable import NimbusKit

/// Pure logic of the client: wire coding, change tracking, merge, backoff, batching, checksums.
@Suite("NimbusKit pure logic")
struct ClientLogicTests {
    @Test func fieldValuesRoundTripThroughTheWireForm() throws {
        let values: [RecordValue] = [
            .string("é ✓"), .int64(Int64.max), .int64(-1), .double(0.25), .date(Date(timeIntervalSince1970: 1_795_000_000.123)),
            .bytes(Data([0, 255, 7])), .reference(Reference(recordID: RecordID(recordName: "p", zoneID: ZoneID("Z")), action: .deleteSelf)),
            .asset(Asset(fileChecksum: "abc=", size: 3, receipt: "r")), .strings(["a", "b"]), .int64s([]), .dates([Date(timeIntervalSince1970: 1)]),
        ]
        for value in values {
            let wire = try JSON.decodeObject(JSON.encode(value.wireJSON()))
            let decoded = try RecordValue.fromWire(wire, zoneID: .default)
            #expect(Record.sameValue(decoded, value), "\(value) came back as \(String(describing: decoded))")
            #expect(decoded?.fieldType == value.fieldType)
        }
        #expect(try RecordValue.fromWire(["value": .null, "type": "STRING"] as JSONObject, zoneID: .default) == nil)
        #expect(throws: NimbusError.self) { try RecordValue.fromWire(["value": "x", "type": "INT64"] as JSONObject, zoneID: .default) }
    }

    @Test func aFetchedRecordSendsOnlyItsChangedFieldsAndRemovalsAsNull() throws {
        var record = Record.fromServer(id: RecordID(recordName: "r"), recordType: "T", fields: ["a": .string("1"), "b": .int64(2)],
                                       changeTag: "t1", created: nil, modified: nil)
        #expect(record.changedKeys.isEmpty)
        record.set("a", "2")
        record.set("b", nil)
        record.set("c", 3.5)
        #expect(record.changedKeys == ["a", "b", "c"])
        let operation = RecordOperation.save(record).wireOperation()
        #expect(operation["operationType"] == "update")
        let fields = operation["record"]?["fields"]?.objectValue
        #expect(fields?.keys.sorted() == ["a", "b", "c"])
        #expect(fields?["b"]?["value"] == .null)
        #expect(operation["record"]?["recordChangeTag"] == "t1")
        #expect(RecordOperation.save(Record(recordType: "T")).kind == .create)
    }

    @Test func fieldMergeTakesEachSidesChangeAndThePreferredSideOnBoth() {
        let base = Record.fromServer(id: RecordID(recordName: "r"), recordType: "T",
                                     fields: ["a": .int64(1), "b": .int64(1), "c": .int64(1), "d": .int64(1)],
                                     changeTag: "1", created: nil, modified: nil)
        var local = base
        local.fields = ["a": .int64(2), "b": .int64(1), "c": .int64(5), "e": .int64(9)]   // a, c changed; d removed; e added
        var server = base
        server.fields = ["a": .int64(1), "b": .int64(3), "c": .int64(7), "d": .int64(1)]  // b, c changed
        let conflict = Conflict(base: base.baseRecord, local: local, server: server)
        let preferLocal = ConflictPolicy.merge(conflict, preferLocal: true)
        #expect(preferLocal == ["a": .int64(2), "b": .int64(3), "c": .int64(5), "e": .int64(9)])
        let preferServer = ConflictPolicy.merge(conflict, preferLocal: false)
        #expect(preferServer["c"] == .int64(7))
        #expect(ConflictPolicy.serverWins.resolve(conflict) == .useServer)
        #expect(ConflictPolicy.clientWins.resolve(conflict) == .useLocal)
        var newer = local
        newer.set("at", Date(timeIntervalSince1970: 20))
        var older = server
        older.set("at", Date(timeIntervalSince1970: 10))
        #expect(ConflictPolicy.lastWriterWins(field: "at").resolve(Conflict(base: nil, local: newer, server: older)) == .useLocal)
        #expect(ConflictPolicy.lastWriterWins(field: "at").resolve(Conflict(base: nil, local: older, server: newer)) == .useServer)
    }

    @Test func backoffGrowsWithJitterUpToItsCapAndHonoursRetryAfter() {
        var backoff = Backoff(base: 1, cap: 8)
        #expect(backoff.nextDelay(random: { $0.upperBound }) == 1)
        #expect(backoff.nextDelay(random: { $0.upperBound }) == 2)
        #expect(backoff.nextDelay(random: { $0.lowerBound }) == 2)
        #expect(backoff.nextDelay(random: { $0.upperBound }) == 8)
        #expect(backoff.nextDelay(random: { $0.upperBound }) == 8)
        #expect(backoff.nextDelay(retryAfter: 30, random: { $0.upperBound }) == 30)
        backoff.reset()
        #expect(backoff.nextDelay(random: { $0.upperBound }) == 1)
        for _ in 0..<100 {
            var b = Backoff(base: 1, cap: 8)
            let d = b.nextDelay()
            #expect(d >= 0.5 && d <= 1)
        }
    }

    @Test func longPollWaitsAreSpreadOverTheLastFifthBelowTheLimit() {
        #expect(jitteredWait(55, random: { $0.lowerBound }) == 44)
        #expect(jitteredWait(55, random: { $0.upperBound }) == 55)
        #expect(jitteredWait(1) == 1 && jitteredWait(0) == 0)
        let waits = Set((0..<200).map { _ in jitteredWait(55) })
        #expect(waits.allSatisfy { (44...55).contains($0) })
        #expect(waits.count > 5, "the waits differ from device to device")
    }

    @Test func requestsSplitAtTheOperationCountAndTheRequestSize() throws {
        var limits = ServerLimits.defaults
        limits.maxOperationsPerRequest = 3
        let small = (0..<7).map { RecordOperation.delete(RecordID(recordName: "r\($0)")) }
        let bySize = try Database.modifyBodies(small, 0..<7, zone: .default, atomic: false, desiredKeys: nil, limits: limits).bodies
        #expect(bySize.map(\.range) == [0..<3, 3..<6, 6..<7])
        limits.maxOperationsPerRequest = 400
        limits.maxRequestBytes = 4096
        let large = (0..<5).map { n -> RecordOperation in
            var record = Record(recordType: "T", id: RecordID(recordName: "r\(n)"))
            record.set("blob", String(repeating: "x", count: 1500))
            return .create(record)
        }
        let bodies = try Database.modifyBodies(large, 0..<5, zone: .default, atomic: false, desiredKeys: nil, limits: limits).bodies
        #expect(bodies.count > 1)
        #expect(bodies.flatMap { Array($0.range) } == Array(0..<5))
        #expect(bodies.allSatisfy { $0.body.count <= 4096 })
        // One record larger than a request may be is not sent: it fails alone, the rest go.
        var mixed = large
        var huge = Record(recordType: "T", id: RecordID(recordName: "huge"))
        huge.set("blob", String(repeating: "x", count: 9000))
        mixed[2] = .create(huge)
        let split = try Database.modifyBodies(mixed, 0..<5, zone: .default, atomic: false, desiredKeys: nil, limits: limits)
        #expect(split.bodies.flatMap { Array($0.range) } == [0, 1, 3, 4])
        #expect(split.oversized.map(\.0) == [2] && split.oversized.first?.1.code == .limitExceeded)
    }

    @Test func operationsWrittenAsBytesEqualTheirJSONSerializationForm() throws {
        var record = Record.fromServer(id: RecordID(recordName: "r\"1", zoneID: ZoneID("Z")), recordType: "T",
                                       fields: ["a": .string("x"), "gone": .int64(1)], changeTag: "t", created: nil, modified: nil)
        record.set("a", "line\nbreak \u{1} ✓")
        record.set("gone", nil)
        record.set("n", 0.1)
        record.set("l", [1, 2])
        record.set("d", Date(timeIntervalSince1970: 1.5))
        record.set("r", Reference(recordID: RecordID(recordName: "p"), action: .deleteSelf))
        record.set("as", Asset(fileChecksum: "c=", size: 4, receipt: "rc"))
        for operation in [RecordOperation.save(record), .forceReplace(record), .delete(record.id, changeTag: "t"), .delete(record.id)] {
            let written = try Database.modifyBody([operation][...], zone: ZoneID("Z"), atomic: true, desiredKeys: ["a"])
            // Both through one writer: compared with sorted keys (the two write members in other orders).
            let parsed = JSONValue.object(try JSON.decodeObject(written)).serialized(sortedKeys: true)
            let expected: JSONValue = ["zoneID": ["zoneName": "Z"], "operations": [.object(operation.wireOperation())], "atomic": true,
                                       "desiredKeys": ["a"]]
            #expect(parsed == expected.serialized(sortedKeys: true), "\(operation.kind)")
        }
        #expect(throws: NimbusError.self) {
            var bad = Record(recordType: "T")
            bad.set("x", Double.nan)
            _ = try Database.modifyBody([.create(bad)][...], zone: .default, atomic: false, desiredKeys: nil)
        }
    }

    @Test func checksumsMatchPublishedSHA256Vectors() throws {
        #expect(Checksum.of(Data()) == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
        #expect(Checksum.of(Data("abc".utf8)) == "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=")
        let long = Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(Checksum.of(long) == "JI1qYdIGOLjlwCaTDD5gOaM85Flk/yFn9uzt1BnbBsE=")
        var split = Checksum()
        for byte in long { split.update(Data([byte])) }
        #expect(split.finalizeBase64() == Checksum.of(long))
    }

    @Test func aLaterChangeOfAPendingRecordKeepsTheOldestBase() {
        let base = Record.fromServer(id: RecordID(recordName: "r"), recordType: "T", fields: ["a": .int64(1)], changeTag: "1",
                                     created: nil, modified: nil)
        var first = base
        first.set("a", 2)
        var second = first
        second.set("a", 3)
        guard case .save(let combined) = SyncEngine.combine(.save(first), with: .save(second)) else {
            Issue.record("a save over a save is not a save")
            return
        }
        #expect(combined.changeTag == "1")
        #expect(combined.serverFields == ["a": .int64(1)])
        #expect(combined.fields["a"] == .int64(3))
        #expect(SyncEngine.combine(.save(first), with: .delete(base.id)) == .delete(base.id))
    }

    @Test func configurationComesFromTheEnvironment() {
        let configuration = NimbusConfiguration.fromEnvironment(["NIMBUS_URL": "http://127.0.0.1:8080", "NIMBUS_TOKEN": "t"])
        #expect(configuration?.environment == .development)
        #expect(NimbusConfiguration.fromEnvironment(["NIMBUS_URL": "http://h", "NIMBUS_TOKEN": "t", "NIMBUS_ENVIRONMENT": "production"])?
            .environment == .production)
        #expect(NimbusConfiguration.fromEnvironment(["NIMBUS_URL": "http://h", "NIMBUS_TOKEN": "t", "NIMBUS_ENVIRONMENT": "staging"]) == nil)
        #expect(NimbusConfiguration.fromEnvironment(["NIMBUS_TOKEN": "t"]) == nil)
        #expect(NimbusConfiguration.fromEnvironment(["NIMBUS_URL": "http://h"]) == nil)
    }

    @Test func serverErrorCodesMapToCloudKitLikeCodes() {
        let cases: [(String, Int, NimbusError.Code, Bool)] = [
            ("CONFLICT", 409, .serverRecordChanged, false), ("THROTTLED", 429, .requestRateLimited, true),
            ("TRY_AGAIN_LATER", 503, .serviceUnavailable, true), ("CHANGE_TOKEN_EXPIRED", 410, .changeTokenExpired, false),
            ("AUTHENTICATION_FAILED", 401, .notAuthenticated, false), ("LIMIT_EXCEEDED", 413, .limitExceeded, false),
            ("QUOTA_EXCEEDED", 413, .quotaExceeded, false), ("ZONE_NOT_FOUND", 404, .zoneNotFound, false),
            ("SOMETHING_NEW", 502, .internalError, true),
        ]
        for (code, status, expected, retryable) in cases {
            let error = NimbusError.fromWire(["serverErrorCode": .string(code), "reason": "r", "retryAfter": 2], status: status, zoneID: .default)
            #expect(error.code == expected, "\(code)")
            #expect(error.isRetryable == retryable, "\(code)")
            #expect(error.retryAfter == 2)
        }
    }
}
