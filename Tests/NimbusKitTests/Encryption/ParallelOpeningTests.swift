import Foundation
import Testing
@testable import NimbusKit

/// `openChanges` opens a page of many sealed values in runs on several threads: the page it gives
/// must be exactly the one a single run gives (the same records, opened, in page order, and the
/// same unreadable records with the same errors, in order), whatever the page's mix of plain
/// records, missing keys and tampered values and wherever the runs' edges fall.
@Suite("End-to-end encryption: a page opened in parallel runs")
struct ParallelOpeningTests {
    static let container = "iCloud.com.example.Parallel"
    static let keyOne = try! AccountKey(id: 1, bytes: Data(repeating: 3, count: 32))
    static let keyTwo = try! AccountKey(id: 2, bytes: Data(repeating: 5, count: 32))

    static func device(_ keys: [AccountKey]) throws -> Container {
        let device = Container(identifier: container, configuration: NimbusConfiguration(serverURL: URL(string: "http://127.0.0.1:9")!, token: "t"))
        device.keyStore = MemoryKeyStore(try KeyRing(keys))
        return device
    }

    /// What a record of the page should become on a device holding key 1 only.
    enum Fate: Equatable { case opened, plain, keyMissing, tampered }

    /// A fetched page of `count` records (their sealed values without plaintexts, as decoded) and
    /// each record's fate: key 1, key 2 (missing), a flipped byte, a value moved from another record.
    static func page(_ count: Int, seed: Int, zone: ZoneID) throws -> (ZoneChanges, [Fate]) {
        let sealerOne = try device([keyOne]), sealerTwo = try device([keyOne, keyTwo])
        var records: [Record] = [], fates: [Fate] = [], sealedValues = 0
        for n in 0 ..< count {
            let id = RecordID(recordName: "r\(seed)-\(n)", zoneID: zone)
            var record = Record(recordType: n % 5 == 0 ? "Note" : "Clip", id: id, fields: ["n": .int64(Int64(n))])
            // Mostly openable, with failures spread so that they fall on and beside the runs' edges.
            let fate: Fate = switch (n * 7 + seed) % 11 {
            case 0: .plain
            case 1: .keyMissing
            case 2: .tampered
            default: .opened
            }
            fates.append(fate)
            if fate != .plain {
                record.fields["title"] = .encrypted(EncryptedValue(.string("title \(seed)-\(n)")))
                record.fields["body"] = .encrypted(EncryptedValue(.bytes(Data("body \(n)".utf8))))
                let sealed = try (fate == .keyMissing ? sealerTwo : sealerOne).seal(record)
                for (key, value) in sealed.fields {
                    guard case .encrypted(let encrypted) = value, var bytes = encrypted.ciphertext else { continue }
                    if fate == .tampered && key == "body" { bytes[bytes.index(before: bytes.endIndex)] ^= 1 }
                    record.fields[key] = .encrypted(EncryptedValue(sealed: bytes))
                    sealedValues += 1
                }
            }
            record.serverFields = record.fields
            records.append(record)
        }
        var page = ZoneChanges(zoneID: zone, modified: records, deleted: [], syncToken: SyncToken("t\(seed)"), moreComing: true)
        page.sealedValues = sealedValues
        return (page, fates)
    }

    @Test func runsOnManyPagesGiveExactlyWhatOneRunGives() throws {
        let device = try Self.device([Self.keyOne])
        #expect(Container.openingParts(sealedValues: 2) == 1)
        for (seed, count) in [(1, 401), (2, 400), (3, 97), (4, 13), (5, 1), (6, 0), (7, 256), (8, 1000)] {
            let zone = ZoneID("zone\(seed % 3)")
            let (page, fates) = try Self.page(count, seed: seed, zone: zone)
            let serial = device.openChanges(page, parts: 1)
            // The serial page itself is right: every record opened or unreadable as planned, in order.
            let opened = zip(page.modified, fates).filter { $0.1 == .opened || $0.1 == .plain }.map(\.0.id)
            #expect(serial.modified.map(\.id) == opened, "page \(seed)")
            #expect(serial.unreadable.map(\.recordID) == zip(page.modified, fates).filter { $0.1 == .keyMissing || $0.1 == .tampered }.map(\.0.id))
            #expect(serial.unreadable.map(\.error.code) == fates.compactMap {
                $0 == .keyMissing ? .encryptionKeyMissing : $0 == .tampered ? .decryptionFailed : nil
            })
            for record in serial.modified where record.fields["title"] != nil {
                #expect(record.fields["title"]?.decrypted == .string("title " + record.recordName.dropFirst()))
            }
            for parts in [nil, 2, 3, 4, 7] {
                let parallel = device.openChanges(page, parts: parts)
                #expect(parallel.modified == serial.modified, "page \(seed), \(parts.map(String.init) ?? "default") runs")
                #expect(parallel.modified.map(\.serverFields) == serial.modified.map(\.serverFields))
                #expect(parallel.unreadable == serial.unreadable, "page \(seed), \(parts.map(String.init) ?? "default") runs")
                #expect(parallel.syncToken == page.syncToken && parallel.moreComing && parallel.zoneID == zone)
            }
        }
    }
}
