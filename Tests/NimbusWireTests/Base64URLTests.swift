import Foundation
import Testing
import NimbusWire
import NimbusSupport  // SplitMix64

@Suite struct Base64URLTests {
    // RFC 4648 §10, without the padding the §5 encoding omits here.
    @Test(arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"),
        ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ])
    func encodesRFC4648Vectors(text: String, encoded: String) {
        #expect(Base64URL.encode(Array(text.utf8)) == encoded)
        #expect(Base64URL.encode(text.utf8) == encoded)
    }

    @Test(arguments: [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ])
    func decodesRFC4648VectorsWithAndWithoutPadding(text: String, padded: String) {
        let unpadded = padded.filter { $0 != "=" }
        #expect(Base64URL.decode(padded) == Array(text.utf8))
        #expect(Base64URL.decode(unpadded) == Array(text.utf8))
    }

    @Test func usesDashAndUnderscoreForValues62And63() {
        #expect(Base64URL.encode([0xfb, 0xff, 0xbf]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xfb, 0xff, 0xbf])
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xfb, 0xff])
    }

    @Test func roundTripsRandomBytesOfEveryLengthUpTo64() {
        var random = SplitMix64(seed: 0xB64)
        for length in 0...64 {
            for _ in 0..<8 {
                let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
                let encoded = Base64URL.encode(bytes)
                // Cross-check against Foundation's standard base64 with the §5 substitutions.
                let standard = Data(bytes).base64EncodedString()
                    .replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: "")
                #expect(encoded == standard, "\(bytes)")
                #expect(Base64URL.decode(encoded) == bytes, "\(bytes)")
            }
        }
    }

    @Test(arguments: ["+/8", "Zm9v+A", "Zm9v/A", "ab+c", "ab/c", "+w==", "/w=="])
    func rejectsTheStandardAlphabetsPlusAndSlash(encoded: String) {
        #expect(Base64URL.decode(encoded) == nil)
    }

    @Test(arguments: ["Zm9v!", "Zm 9v", " Zm9v", "Zm9v\n", "Zm9v\r\n", "Zé9v", "Zm\u{0}v", "Zm9v.", "Zm9v%3D", "Z\u{7F}9v"])
    func rejectsCharactersOutsideTheAlphabet(encoded: String) {
        #expect(Base64URL.decode(encoded) == nil)
    }

    @Test(arguments: ["Z", "Zm9vY", "Z===", "Zm9vY===", "Zg=", "Zg===", "Zm8==", "=", "==", "====", "Zm=9", "Z=m9", "=Zm9"])
    func rejectsImpossibleLengthsAndMisplacedPadding(encoded: String) {
        #expect(Base64URL.decode(encoded) == nil)
    }

    @Test func rejectsNonZeroPadBits() {
        // RFC 4648 §3.5: "Zg" is the only encoding of "f"; "Zh" sets a bit that encodes nothing.
        #expect(Base64URL.decode("Zg") == Array("f".utf8))
        #expect(Base64URL.decode("Zh") == nil)
        #expect(Base64URL.decode("Zh==") == nil)
        #expect(Base64URL.decode("Zm8") == Array("fo".utf8))
        #expect(Base64URL.decode("Zm9") == nil)
    }

    @Test func decodesSubstrings() {
        let token = "v1.Zm9vYmFy.sig"
        let parts = token.split(separator: ".")
        #expect(Base64URL.decode(parts[1]) == Array("foobar".utf8))
    }

    // RFC 4648 §10 base16 vectors, in lower case.
    @Test(arguments: [
        ("", ""), ("f", "66"), ("fo", "666f"), ("foo", "666f6f"),
        ("foob", "666f6f62"), ("fooba", "666f6f6261"), ("foobar", "666f6f626172"),
    ])
    func hexEncodesRFC4648VectorsInLowerCase(text: String, encoded: String) {
        #expect(Hex.encode(Array(text.utf8)) == encoded)
        #expect(Hex.decode(encoded) == Array(text.utf8))
        #expect(Hex.decode(encoded.uppercased()) == Array(text.utf8))
    }

    @Test func hexRoundTripsEveryByte() {
        let bytes = (0...255).map { UInt8($0) }
        let encoded = Hex.encode(bytes)
        #expect(encoded.count == 512)
        #expect(encoded.hasPrefix("000102"))
        #expect(encoded.hasSuffix("fdfeff"))
        #expect(Hex.decode(encoded) == bytes)
    }

    @Test(arguments: ["0", "abc", "0g", "g0", "-1", "0x00", " 00", "00 ", "é0"])
    func hexRejectsOddLengthsAndNonHexCharacters(encoded: String) {
        #expect(Hex.decode(encoded) == nil)
    }
}
