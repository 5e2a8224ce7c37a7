import Foundation
import Testing
@testable import NimbusKit

func hex(_ text: String) -> Data {
    var data = Data()
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        data.append(UInt8(text[index..<next], radix: 16) ?? 0)
        index = next
    }
    return data
}

extension Data {
    var hexString: String { map { String(format: "%02x", $0) }.joined() }
}

/// The primitives against published vectors (on Linux: OpenSSL's libcrypto through CCrypto), and
/// the format against the vectors docs/encryption.md prints (made by an independent implementation).
@Suite("End-to-end encryption: known answers")
struct EncryptionKnownAnswerTests {
    // The GCM specification's AES-256 test cases 13–16 (the vectors NIST SP 800-38D's validation cites).
    static let gcm: [(key: String, iv: String, plaintext: String, aad: String, ciphertext: String, tag: String)] = [
        (String(repeating: "0", count: 64), String(repeating: "0", count: 24), "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"),
        (String(repeating: "0", count: 64), String(repeating: "0", count: 24), String(repeating: "0", count: 32), "",
         "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"),
        ("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
         "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255", "",
         "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
         "b094dac5d93471bdec1a502270e3cc6c"),
        ("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
         "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
         "feedfacedeadbeeffeedfacedeadbeefabaddad2",
         "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
         "76fc6ece0f4e1768cddf8853bb2d551b"),
    ]

    @Test func aes256GCMSealsAndOpensTheSpecificationVectors() throws {
        for v in Self.gcm {
            let sealed = try Primitives.seal(key: hex(v.key), nonce: hex(v.iv), plaintext: hex(v.plaintext), aad: hex(v.aad))
            #expect(sealed.hexString == v.ciphertext + v.tag)
            #expect(try Primitives.open(key: hex(v.key), nonce: hex(v.iv), sealed: sealed, aad: hex(v.aad)) == hex(v.plaintext))
            var flipped = sealed
            flipped[flipped.count - 1] ^= 1
            #expect(throws: CryptoFailure.authentication) { try Primitives.open(key: hex(v.key), nonce: hex(v.iv), sealed: flipped, aad: hex(v.aad)) }
            #expect(throws: CryptoFailure.authentication) { try Primitives.open(key: hex(v.key), nonce: hex(v.iv), sealed: sealed, aad: Data("x".utf8)) }
        }
    }

    @Test func hkdfSHA256GivesTheRFC5869Vectors() {
        let ikm = Data(repeating: 0x0b, count: 22)
        // Test case 1.
        #expect(Primitives.hkdf(ikm: ikm, salt: hex("000102030405060708090a0b0c"), info: hex("f0f1f2f3f4f5f6f7f8f9"), length: 42).hexString
            == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        // Test case 2 (long inputs, 82 bytes out: three HMAC blocks).
        let ikm2 = Data((0x00...0x4f).map { UInt8($0) }), salt2 = Data((0x60...0xaf).map { UInt8($0) }), info2 = Data((0xb0...0xff).map { UInt8($0) })
        #expect(Primitives.hkdf(ikm: ikm2, salt: salt2, info: info2, length: 82).hexString
            == "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87")
        // Test case 3 (no salt, no info).
        #expect(Primitives.hkdf(ikm: ikm, salt: Data(), info: Data(), length: 42).hexString
            == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    }

    @Test func hmacSHA256GivesTheRFC4231Vectors() {
        #expect(Primitives.hmacSHA256(key: Data(repeating: 0x0b, count: 20), message: Data("Hi There".utf8)).hexString
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(Primitives.hmacSHA256(key: Data("Jefe".utf8), message: Data("what do ya want for nothing?".utf8)).hexString
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    // docs/encryption.md § Test vectors.
    static let key = try! AccountKey(id: 1, bytes: Data((0..<32).map { UInt8($0) }))
    static let context = SealContext(container: "iCloud.com.example.Maccy", zone: "_defaultZone", recordType: "HistoryItemContent",
                                     recordName: "item-1", field: "value")

    @Test func theFormatGivesTheDocumentedFieldVector() throws {
        #expect(SealFormat.zoneKey(Self.key.bytes, container: Self.context.container, zone: Self.context.zone).hexString
            == "810d968dc98e375c8a3f9f7329705955c65430b2b4b77d37e4e927a677de6e91")
        let plaintext = try FieldPlaintext.encode(.string("hunter2"))
        #expect(String(decoding: plaintext, as: UTF8.self) == #"{"type":"STRING","value":"hunter2"}"#)
        let sealed = try SealFormat.sealField(plaintext, key: Self.key, context: Self.context, nonce: Data((0..<12).map { UInt8($0) }))
        let documented = "0100000001000102030405060708090a0b63ce7c9082f8144b7327ea77a8799d9c82f41c5855178271dbe6cee180eee80f6ecd30041ce1c748a90f6c03f82ae6e27a29a1"
        #expect(sealed.hexString == documented)
        let opened = try SealFormat.openField(hex(documented), keys: KeyRing([Self.key]), context: Self.context)
        #expect(try FieldPlaintext.decode(opened, context: Self.context, zoneID: .default) == .string("hunter2"))
        // The doc's text itself carries the same vector (docs/encryption.md is the contract for other clients).
        let doc = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../docs/encryption.md"), encoding: .utf8)
        #expect(doc.contains(documented))
        #expect(doc.contains("0100000001101112131415161718191a1b1c1d1e1f04173abaab0d8cf2a281619e2f18b69c729c2bd572"))
        #expect(doc.contains("3537428abad1868a7a6e731f9974be300ac4248f7c2b848318686a2325bd289e"))
    }

    @Test func theFormatGivesTheDocumentedAssetVectors() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-kat-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let salt = Data((16..<32).map { UInt8($0) })
        let cases: [(Data, String)] = [
            (Data("photo".utf8), "0100000001101112131415161718191a1b1c1d1e1f04173abaab0d8cf2a281619e2f18b69c729c2bd572"),
            (Data(), "0100000001101112131415161718191a1b1c1d1e1f6e596b0cbc16e64700cc46f0993d5b71"),
        ]
        for (plaintext, expected) in cases {
            let source = directory.appendingPathComponent("plain"), sealed = directory.appendingPathComponent("sealed")
            try plaintext.write(to: source)
            try AssetSeal.seal(source, to: sealed, key: Self.key, context: Self.context, salt: salt)
            #expect(try Data(contentsOf: sealed).hexString == expected)
        }
        // Two segments: 65,536 + 10 bytes of i mod 251; the doc gives the sealed file's length and SHA-256.
        let big = Data((0..<65_546).map { UInt8($0 % 251) })
        let source = directory.appendingPathComponent("big"), sealed = directory.appendingPathComponent("big.sealed")
        try big.write(to: source)
        try AssetSeal.seal(source, to: sealed, key: Self.key, context: Self.context, salt: salt)
        let bytes = try Data(contentsOf: sealed)
        #expect(bytes.count == 65_599)
        #expect(Data(base64Encoded: Checksum.of(bytes))?.hexString == "3537428abad1868a7a6e731f9974be300ac4248f7c2b848318686a2325bd289e")
    }
}
