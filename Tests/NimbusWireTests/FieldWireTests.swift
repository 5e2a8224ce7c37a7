import NimbusWire
import Testing

/// The record and field wire coding both sides write through (`FieldWire`, `RecordWire`,
/// `WireKey`, `FieldType`): the shapes of docs/api.md, the same bytes into either writer.
@Suite struct FieldWireTests {
    /// What `body` writes into a page writer and into a `JSONWriter`, which must agree.
    func written(_ body: (inout JSONPageWriter) -> Void, _ same: (inout JSONWriter) -> Void,
                 sourceLocation: SourceLocation = #_sourceLocation) -> String {
        var page = JSONPageWriter()
        body(&page)
        var tree = JSONWriter(sortedKeys: false)
        same(&tree)
        let bytes = page.finish()
        #expect(bytes == tree.bytes, sourceLocation: sourceLocation)
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test(arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
                      ("foobar", "Zm9vYmFy")])
    func bytesAreStandardPaddedBase64(plain: String, base64: String) {
        // RFC 4648 §10's vectors.
        let bytes = Array(plain.utf8)
        let text = written({ w in bytes.withUnsafeBytes { FieldWire.writeBytes($0, to: &w) } },
                           { w in bytes.withUnsafeBytes { FieldWire.writeBytes($0, to: &w) } })
        #expect(text == "\"\(base64)\"")
    }

    @Test func everyByteValueAndLengthEncodesAsTheStandardAlphabetSays() {
        let bytes = (0..<255).map { UInt8($0) } + [0xFB, 0xFF, 0xBF]  // 258 bytes: the last group whole
        let text = written({ w in bytes.withUnsafeBytes { FieldWire.writeBytes($0, to: &w) } },
                           { w in bytes.withUnsafeBytes { FieldWire.writeBytes($0, to: &w) } })
        // Decoded back by hand: 6 bits per character, the alphabet's positions.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var bits: UInt32 = 0, count = 0, decoded: [UInt8] = []
        for character in text.utf8.dropFirst().dropLast() where character != UInt8(ascii: "=") {
            bits = bits << 6 | UInt32(alphabet.firstIndex(of: character) ?? 0)
            count += 6
            if count >= 8 {
                count -= 8
                decoded.append(UInt8(truncatingIfNeeded: bits >> UInt32(count)))
            }
        }
        #expect(decoded == bytes)
        #expect(text.utf8.count == 2 + (bytes.count + 2) / 3 * 4)
        #expect(text.hasSuffix("+/\""))  // 0xFB 0xFF 0xBF: the last two alphabet characters
    }

    @Test func referencesAndAssetsHaveTheShapesOfTheAPI() {
        #expect(written({ FieldWire.writeReference(recordName: "p\"1", zoneName: "Z", action: .deleteSelf, to: &$0) },
                        { FieldWire.writeReference(recordName: "p\"1", zoneName: "Z", action: .deleteSelf, to: &$0) })
                == #"{"recordName":"p\"1","action":"DELETE_SELF","zoneID":{"zoneName":"Z"}}"#)
        #expect(written({ FieldWire.writeReference(recordName: "p", zoneName: nil, action: .none, to: &$0) },
                        { FieldWire.writeReference(recordName: "p", zoneName: nil, action: .none, to: &$0) })
                == #"{"recordName":"p","action":"NONE"}"#)
        #expect(written({ FieldWire.writeAsset(fileChecksum: "c=", size: 4, receipt: "r", downloadURL: "https://h/a", to: &$0) },
                        { FieldWire.writeAsset(fileChecksum: "c=", size: 4, receipt: "r", downloadURL: "https://h/a", to: &$0) })
                == #"{"fileChecksum":"c=","size":4,"receipt":"r","downloadURL":"https://h/a"}"#)
        #expect(written({ FieldWire.writeAsset(fileChecksum: nil, size: 4, receipt: nil, downloadURL: nil, to: &$0) },
                        { FieldWire.writeAsset(fileChecksum: nil, size: 4, receipt: nil, downloadURL: nil, to: &$0) }) == #"{"size":4}"#)
        #expect(written({ FieldWire.writeAsset(fileChecksum: nil, size: nil, receipt: nil, downloadURL: nil, to: &$0) },
                        { FieldWire.writeAsset(fileChecksum: nil, size: nil, receipt: nil, downloadURL: nil, to: &$0) }) == "{}")
        #expect(written({ FieldWire.writeTimestamp(milliseconds: -1_500, to: &$0) },
                        { FieldWire.writeTimestamp(milliseconds: -1_500, to: &$0) }) == "-1500")
        #expect(ReferenceAction.allCases.allSatisfy { $0.quotedName.description == "\"\($0.rawValue)\"" })
    }

    @Test func theWrittenMembersAreTheWireKeys() throws {
        var record = JSONPageWriter(), reference = JSONPageWriter(), asset = JSONPageWriter()
        let fields = Array(#"{"f":{"value":1,"type":"INT64"}}"#.utf8)
        fields.withUnsafeBytes { fields in
            RecordWire.writeRecord(name: "n", type: "T", tag: .text("t"), fields: fields, created: (1, "_u", "d"),
                                   modified: (2, "_u", "d"), zoneName: "Z", to: &record)
        }
        FieldWire.writeReference(recordName: "p", zoneName: "Z", action: .none, to: &reference)
        FieldWire.writeAsset(fileChecksum: "c", size: 1, receipt: "r", downloadURL: "u", to: &asset)
        var request = JSONWriter(sortedKeys: false)
        RecordWire.writeRequestRecord(name: "n", zoneName: "Z", type: "T", changeTag: "t", to: &request)
        request.append(RecordWire.fieldsMember)
        request.append("{\"f\"")
        request.append(FieldWire.removal)
        request.append("}}")
        var keys = Set<String>()
        func collect(_ value: JSONValue, isFields: Bool = false) {
            guard case .object(let object) = value else { return }
            for (key, member) in object {
                if !isFields { keys.insert(key) }
                collect(member, isFields: !isFields && key == WireKey.fields.rawValue)
            }
        }
        for document in [record.finish(), reference.finish(), asset.finish(), request.bytes] { collect(try JSONValue.parse(document)) }
        #expect(try JSONValue.parse(request.bytes)["fields"]?["f"] == ["value": .null])
        #expect(keys == Set(WireKey.allCases.map(\.rawValue)))
        #expect(WireKey.allCases.allSatisfy { $0.spelling.description == $0.rawValue })
    }

    @Test func theTypeVocabularyNamesFifteenTypes() {
        #expect(FieldType.names == ["STRING", "STRING_LIST", "INT64", "INT64_LIST", "DOUBLE", "DOUBLE_LIST", "TIMESTAMP",
                                    "TIMESTAMP_LIST", "BYTES", "BYTES_LIST", "REFERENCE", "REFERENCE_LIST", "ASSETID",
                                    "ASSETID_LIST", "ENCRYPTED_BYTES"])
        for type in FieldType.all {
            #expect(FieldType(name: type.name) == type)
            #expect(type.quotedName.description == "\"\(type.name)\"")
            #expect(type.isList == type.name.hasSuffix("_LIST"))
        }
        #expect(FieldType(name: "STRING_LIST_LIST") == nil && FieldType(name: "ENCRYPTED_BYTES_LIST") == nil)
    }
}
