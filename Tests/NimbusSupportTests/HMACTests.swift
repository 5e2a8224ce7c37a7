import Testing
import NimbusSupport

@Suite struct HMACTests {
    /// One test case of RFC 4231 §4: key and data as bytes, the expected HMAC-SHA-256 in hex.
    struct Vector: Sendable, CustomTestStringConvertible {
        let number: Int
        let key: [UInt8]
        let data: [UInt8]
        let mac: String
        var testDescription: String { "RFC 4231 test case \(number)" }
    }

    static let rfc4231: [Vector] = [
        Vector(
            number: 1,
            key: [UInt8](repeating: 0x0b, count: 20),
            data: Array("Hi There".utf8),
            mac: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        ),
        Vector(
            number: 2,
            key: Array("Jefe".utf8),
            data: Array("what do ya want for nothing?".utf8),
            mac: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ),
        Vector(
            number: 3,
            key: [UInt8](repeating: 0xaa, count: 20),
            data: [UInt8](repeating: 0xdd, count: 50),
            mac: "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
        ),
        Vector(
            number: 4,
            key: Array(0x01...0x19),
            data: [UInt8](repeating: 0xcd, count: 50),
            mac: "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
        ),
        // Test case 5 specifies only the first 128 bits of the output.
        Vector(
            number: 5,
            key: [UInt8](repeating: 0x0c, count: 20),
            data: Array("Test With Truncation".utf8),
            mac: "a3b6167473100ee06e0c796c2955552b"
        ),
        Vector(
            number: 6,
            key: [UInt8](repeating: 0xaa, count: 131),
            data: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
            mac: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        ),
        Vector(
            number: 7,
            key: [UInt8](repeating: 0xaa, count: 131),
            data: Array(
                ("This is a test using a larger than block-size key and a larger than block-size data. "
                    + "The key needs to be hashed before being used by the HMAC algorithm.").utf8
            ),
            mac: "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
        ),
    ]

    @Test(arguments: rfc4231)
    func matchesRFC4231(_ vector: Vector) {
        let mac = HMACSHA256.authenticate(vector.data, key: vector.key)
        #expect(mac.count == HMACSHA256.byteCount)
        #expect(Hex.encode(mac.prefix(vector.mac.count / 2)) == vector.mac)
    }

    @Test(arguments: rfc4231)
    func streamingMatchesOneShot(_ vector: Vector) {
        let expected = HMACSHA256.authenticate(vector.data, key: vector.key)
        for split in 0...vector.data.count {
            var authenticator = HMACSHA256(key: vector.key)
            authenticator.update(vector.data[..<split])
            vector.data[split...].withUnsafeBytes { authenticator.update($0) }
            #expect(authenticator.finalize() == expected, "split at \(split)")
        }
    }

    @Test func authenticatesTheUTF8OfAString() {
        let key = Array("Jefe".utf8)
        var authenticator = HMACSHA256(key: key)
        authenticator.update("what do ya want ")
        authenticator.update("for nothing?")
        let expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        #expect(Hex.encode(authenticator.finalize()) == expected)
        #expect(Hex.encode(HMACSHA256.authenticate("what do ya want for nothing?", key: key)) == expected)
    }

    @Test func hashesOnlyKeysLongerThanTheBlock() {
        let message = Array("message".utf8)
        // RFC 2104 §2: a key of more than 64 bytes is equivalent to its SHA-256 digest...
        let longKey = [UInt8](repeating: 0x42, count: 65)
        #expect(HMACSHA256.authenticate(message, key: longKey) == HMACSHA256.authenticate(message, key: SHA256.hash(longKey)))
        // ...but a key of exactly 64 bytes is used as it is.
        let blockKey = [UInt8](repeating: 0x42, count: 64)
        #expect(HMACSHA256.authenticate(message, key: blockKey) != HMACSHA256.authenticate(message, key: SHA256.hash(blockKey)))
    }

    @Test func differentKeysGiveDifferentMACs() {
        let message = Array("message".utf8)
        #expect(HMACSHA256.authenticate(message, key: [1]) != HMACSHA256.authenticate(message, key: [2]))
        // Zero padding makes a key and the same key with trailing zeros equivalent (RFC 2104 §2).
        #expect(HMACSHA256.authenticate(message, key: [1]) == HMACSHA256.authenticate(message, key: [1, 0]))
    }

    @Test func constantTimeEqualsAcceptsOnlyIdenticalBytes() {
        let mac = HMACSHA256.authenticate(Array("Hi There".utf8), key: [UInt8](repeating: 0x0b, count: 20))
        #expect(constantTimeEquals(mac, mac))
        #expect(constantTimeEquals([], []))
        var lastByteFlipped = mac
        lastByteFlipped[31] ^= 0x01
        #expect(!constantTimeEquals(mac, lastByteFlipped))
        var firstByteFlipped = mac
        firstByteFlipped[0] ^= 0x80
        #expect(!constantTimeEquals(mac, firstByteFlipped))
        #expect(!constantTimeEquals(mac, Array(mac.prefix(16))))
        #expect(!constantTimeEquals(mac, mac + [0]))
        #expect(!constantTimeEquals([], [0]))
    }
}
