import Foundation
@testable import NimbusKit
import NimbusWire
import Testing

/// NimbusKit writes fields through NimbusWire's wire coding, the one the server reads and writes
/// (`FieldWire`, `RecordWire`, NimbusWire's `FieldType`).
@Suite struct FieldTypeWireTests {
    /// The public `FieldType` keeps string forms of `isList`/`listType`/`elementType` (the changes
    /// decoder calls them per field): they agree with the wire vocabulary for every name.
    @Test func theClientsTypesAreTheWiresVocabulary() {
        for wire in NimbusWire.FieldType.all {
            let client = NimbusKit.FieldType(wire)
            #expect(client.wire == wire && client.rawValue == wire.name)
            #expect(client.isList == wire.isList, "\(wire)")
            if wire.isList {
                #expect(client.elementType == NimbusKit.FieldType(wire.element), "\(wire)")
                #expect(client.elementType.listType == client, "\(wire)")
            } else if !wire.isEncrypted {
                #expect(client.listType == NimbusKit.FieldType(NimbusWire.FieldType(wire.base, isList: true)), "\(wire)")
                #expect(client.elementType == client, "\(wire)")
            }
        }
        let named: [NimbusKit.FieldType] = [.string, .int64, .double, .timestamp, .bytes, .reference, .asset, .encryptedBytes]
        #expect(named.map(\.wire) == [.string, .int64, .double, .timestamp, .bytes, .reference, .assetID, .encryptedBytes])
        #expect(NimbusKit.FieldType(rawValue: "NOPE").wire == nil)
    }

    @Test func aModifyBodyCarriesEachTypesWireForm() throws {
        var record = Record(recordType: "T", id: RecordID(recordName: "r", zoneID: ZoneID("Z")))
        record.set("d", Date(timeIntervalSince1970: 1.5))
        record.set("b", Data([0, 255]))
        record.set("r", Reference(recordID: RecordID(recordName: "p", zoneID: ZoneID("Y")), action: .deleteSelf))
        record.set("a", Asset(fileChecksum: "c=", size: 4, receipt: "rc"))
        record.set("l", [1, 2])
        let body = String(decoding: try Database.modifyBody([.create(record)][...], zone: ZoneID("Z"), atomic: false, desiredKeys: nil),
                          as: UTF8.self)
        #expect(body.contains(#""record":{"recordName":"r","zoneID":{"zoneName":"Z"},"recordType":"T","fields":{"#))
        for field in [#""d":{"value":1500,"type":"TIMESTAMP"}"#, #""b":{"value":"AP8=","type":"BYTES"}"#,
                      #""r":{"value":{"recordName":"p","action":"DELETE_SELF","zoneID":{"zoneName":"Y"}},"type":"REFERENCE"}"#,
                      #""a":{"value":{"fileChecksum":"c=","size":4,"receipt":"rc"},"type":"ASSETID"}"#,
                      #""l":{"value":[1,2],"type":"INT64_LIST"}"#] {
            #expect(body.contains(field), "\(field) in \(body)")
        }
    }
}
