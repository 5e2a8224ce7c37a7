import Foundation
@testable import NimbusCore
import Testing

/// Signed zone and database change tokens and signed opaque values (docs/api.md records/changes, zones/changes).
@Suite struct ChangeTokenTests {
    let signer = TokenSigner(key: Array("server secret key of thirty-two!".utf8))
    let zoneToken = ZoneChangeToken(databaseID: 7, zoneID: 42, sequence: 1234)

    // Test-side base64url so the tests can edit token bytes without depending on NimbusSupport.
    static func bytes(_ token: String) -> [UInt8] {
        var text = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text) else { fatalError("not base64url: \(token)") }
        return Array(data)
    }

    static func text(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func bigEndian(_ value: Int64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }

    /// Every single-bit change of every byte, as tokens.
    static func tampered(_ token: String) -> [String] {
        let original = bytes(token)
        return original.indices.flatMap { index in
            [UInt8(0x01), 0x80].map { bit in
                var copy = original
                copy[index] ^= bit
                return text(copy)
            }
        }
    }

    // MARK: zone tokens

    @Test(arguments: [
        ZoneChangeToken(databaseID: 7, zoneID: 42, sequence: 1234),
        ZoneChangeToken(databaseID: 0, zoneID: 0, sequence: 0),
        ZoneChangeToken(databaseID: .max, zoneID: .min, sequence: -1),
    ])
    func aZoneTokenRoundTripsInItsZone(token: ZoneChangeToken) {
        let text = signer.encode(token, zoneName: "Notes")
        #expect(signer.decodeZoneToken(text, zoneName: "Notes") == token)
    }

    @Test func aZoneTokenIsURLSafeText() {
        let text = signer.encode(zoneToken, zoneName: "Notes")
        #expect(text.utf8.allSatisfy { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || (48...57).contains($0)
            || (65...90).contains($0) || (97...122).contains($0) })
        #expect(!text.isEmpty)
    }

    @Test(arguments: ["notes", "Notes2", "_defaultZone", "", "database"])
    func aZoneTokenIsRefusedInAnotherZone(zoneName: String) {
        #expect(signer.decodeZoneToken(signer.encode(zoneToken, zoneName: "Notes"), zoneName: zoneName) == nil)
    }

    @Test func aZoneTokenWithAnyBitFlippedIsRefused() {
        let text = signer.encode(zoneToken, zoneName: "Notes")
        let forgeries = Self.tampered(text)
        #expect(forgeries.count == Self.bytes(text).count * 2)
        for forged in forgeries {
            #expect(signer.decodeZoneToken(forged, zoneName: "Notes") == nil, "\(forged)")
        }
    }

    @Test func aTruncatedOrExtendedZoneTokenIsRefused() {
        let bytes = Self.bytes(signer.encode(zoneToken, zoneName: "Notes"))
        #expect(signer.decodeZoneToken(Self.text(Array(bytes.dropLast())), zoneName: "Notes") == nil)
        #expect(signer.decodeZoneToken(Self.text(Array(bytes.dropFirst())), zoneName: "Notes") == nil)
        #expect(signer.decodeZoneToken(Self.text(bytes + [0]), zoneName: "Notes") == nil)
        #expect(signer.decodeZoneToken(Self.text(Array(bytes.prefix(26))), zoneName: "Notes") == nil)
    }

    @Test(arguments: ["", "!!!!", "a", "not a token", "AAAA"])
    func garbageIsNotAZoneToken(text: String) {
        #expect(signer.decodeZoneToken(text, zoneName: "Notes") == nil)
    }

    @Test func aProperlySignedZonePayloadWithAnotherVersionOrKindIsRefused() {
        let body = Self.bigEndian(7) + Self.bigEndian(42) + Self.bigEndian(1)
        // The same MAC construction as a real token, so only the version/kind checks can refuse these.
        #expect(signer.decodeZoneToken(signer.sign([1, 1] + body, context: "Notes"), zoneName: "Notes")
                == ZoneChangeToken(databaseID: 7, zoneID: 42, sequence: 1))
        #expect(signer.decodeZoneToken(signer.sign([2, 1] + body, context: "Notes"), zoneName: "Notes") == nil)
        #expect(signer.decodeZoneToken(signer.sign([0, 1] + body, context: "Notes"), zoneName: "Notes") == nil)
        #expect(signer.decodeZoneToken(signer.sign([1, 2] + body, context: "Notes"), zoneName: "Notes") == nil)
    }

    @Test func aZoneTokenSignedWithAnotherKeyIsRefused() {
        let other = TokenSigner(key: Array("another secret".utf8))
        #expect(signer.decodeZoneToken(other.encode(zoneToken, zoneName: "Notes"), zoneName: "Notes") == nil)
    }

    @Test func zoneTokensAreDeterministicAndDifferPerSequence() {
        let first = signer.encode(zoneToken, zoneName: "Notes")
        #expect(first == signer.encode(zoneToken, zoneName: "Notes"))
        var next = zoneToken
        next.sequence += 1
        #expect(first != signer.encode(next, zoneName: "Notes"))
    }

    // MARK: database tokens

    static func databaseToken(zoneCount: Int) -> DatabaseChangeToken {
        var zones: [Int64: Int64] = [:]
        for index in 0..<zoneCount { zones[Int64(index * 3 + 1)] = Int64(index * 1000 + 7) }
        return DatabaseChangeToken(databaseID: 99, zones: zones)
    }

    @Test(arguments: [0, 1, 50])
    func aDatabaseTokenRoundTrips(zoneCount: Int) {
        let token = Self.databaseToken(zoneCount: zoneCount)
        #expect(signer.decodeDatabaseToken(signer.encode(token)) == token)
    }

    @Test(arguments: [0, 1, 50])
    func aDatabaseTokenWithAnyBitFlippedIsRefused(zoneCount: Int) {
        for forged in Self.tampered(signer.encode(Self.databaseToken(zoneCount: zoneCount))) {
            #expect(signer.decodeDatabaseToken(forged) == nil, "\(forged)")
        }
    }

    @Test func aTruncatedDatabaseTokenOrOneFromAnotherKeyIsRefused() {
        let text = signer.encode(Self.databaseToken(zoneCount: 3))
        let bytes = Self.bytes(text)
        #expect(signer.decodeDatabaseToken(Self.text(Array(bytes.dropLast()))) == nil)
        #expect(signer.decodeDatabaseToken(Self.text(Array(bytes.dropLast(16)))) == nil)
        #expect(signer.decodeDatabaseToken(Self.text(Array(bytes.dropFirst()))) == nil)
        #expect(TokenSigner(key: [1, 2, 3]).decodeDatabaseToken(text) == nil)
    }

    @Test func aDatabaseTokenDoesNotDependOnInsertionOrder() {
        let forward = DatabaseChangeToken(databaseID: 1, zones: Dictionary(uniqueKeysWithValues: (1...20).map { (Int64($0), Int64($0)) }))
        let backward = DatabaseChangeToken(databaseID: 1, zones: Dictionary(uniqueKeysWithValues: (1...20).reversed().map { (Int64($0), Int64($0)) }))
        #expect(signer.encode(forward) == signer.encode(backward))
    }

    @Test func aSignedDatabasePayloadWithAWrongCountVersionOrKindIsRefused() {
        let pair = Self.bigEndian(5) + Self.bigEndian(6)
        #expect(signer.decodeDatabaseToken(signer.sign([1, 2] + Self.bigEndian(9) + Self.bigEndian(1) + pair, context: "database"))
                == DatabaseChangeToken(databaseID: 9, zones: [5: 6]))
        #expect(signer.decodeDatabaseToken(signer.sign([1, 2] + Self.bigEndian(9) + Self.bigEndian(2) + pair, context: "database")) == nil)
        #expect(signer.decodeDatabaseToken(signer.sign([1, 2] + Self.bigEndian(9) + Self.bigEndian(0) + pair, context: "database")) == nil)
        #expect(signer.decodeDatabaseToken(signer.sign([1, 2] + Self.bigEndian(9) + Self.bigEndian(-1) + pair, context: "database")) == nil)
        #expect(signer.decodeDatabaseToken(signer.sign([2, 2] + Self.bigEndian(9) + Self.bigEndian(1) + pair, context: "database")) == nil)
        #expect(signer.decodeDatabaseToken(signer.sign([1, 1] + Self.bigEndian(9) + Self.bigEndian(1) + pair, context: "database")) == nil)
    }

    @Test func zoneAndDatabaseTokensAreNotInterchangeable() {
        let zoneText = signer.encode(zoneToken, zoneName: "database")
        #expect(signer.decodeDatabaseToken(zoneText) == nil)
        let databaseText = signer.encode(DatabaseChangeToken(databaseID: 7, zones: [42: 1]))
        #expect(signer.decodeZoneToken(databaseText, zoneName: "database") == nil)
    }

    // MARK: sign / verify

    @Test(arguments: [[], [0], Array("[\"a\",1]".utf8), [UInt8](repeating: 0xAB, count: 300)] as [[UInt8]])
    func signedPayloadsVerifyInTheirContext(payload: [UInt8]) {
        #expect(signer.verify(signer.sign(payload, context: "query|Notes|Note|"), context: "query|Notes|Note|") == payload)
    }

    @Test func aSignedPayloadIsRefusedInAnotherContext() {
        let text = signer.sign(Array("marker".utf8), context: "query|Notes|Note|title:true")
        #expect(signer.verify(text, context: "query|Notes|Note|title:false") == nil)
        #expect(signer.verify(text, context: "query|Other|Note|title:true") == nil)
        #expect(signer.verify(text, context: "") == nil)
    }

    @Test func aTamperedTruncatedOrForeignSignedPayloadIsRefused() {
        let text = signer.sign(Array("marker".utf8), context: "c")
        for forged in Self.tampered(text) {
            #expect(signer.verify(forged, context: "c") == nil, "\(forged)")
        }
        #expect(signer.verify(Self.text(Array(Self.bytes(text).dropLast())), context: "c") == nil)
        #expect(signer.verify(Self.text(Array(Self.bytes(text).dropFirst())), context: "c") == nil)
        #expect(signer.verify(Self.text([UInt8](repeating: 0, count: 15)), context: "c") == nil)
        #expect(signer.verify("", context: "c") == nil)
        #expect(signer.verify("%%%", context: "c") == nil)
        #expect(TokenSigner(key: [9]).verify(text, context: "c") == nil)
    }

    @Test func theContextIsSeparatedFromThePayload() {
        // payload "ab" in context "c" must not verify as payload "a" in context "bc" (the 0 separator).
        let text = signer.sign(Array("ab".utf8), context: "c")
        let bytes = Self.bytes(text)
        let shifted = Self.text(Array(bytes[0..<1]) + Array(bytes[2...]))
        #expect(signer.verify(shifted, context: "bc") == nil)
    }
}
