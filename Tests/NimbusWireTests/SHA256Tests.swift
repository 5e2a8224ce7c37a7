import Testing
import NimbusWire
import NimbusSupport  // SplitMix64

@Suite struct SHA256Tests {
    // FIPS 180-4 examples (NIST CSRC "SHA256.pdf" and "SHA2_Additional.pdf").
    @Test(arguments: [
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
        (
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
        ),
    ])
    func matchesFIPS180Vectors(message: String, digest: String) {
        #expect(Hex.encode(SHA256.hash(message)) == digest)
        #expect(Hex.encode(SHA256.hash(Array(message.utf8))) == digest)
    }

    static let oneMillionAsDigest = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"

    @Test func hashesOneMillionAsToTheFIPSVector() {
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(Hex.encode(SHA256.hash(message)) == Self.oneMillionAsDigest)
    }

    @Test func hashesOneMillionAsFromANonContiguousSequence() {
        // `Repeated` has no contiguous storage, so this goes through the staging path.
        let message = repeatElement(UInt8(ascii: "a"), count: 1_000_000)
        #expect(Hex.encode(SHA256.hash(message)) == Self.oneMillionAsDigest)
    }

    // Computed with /usr/bin/sha256sum over that many "a" characters when these tests were written.
    @Test(arguments: [
        (55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"),
        (56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"),
        (63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"),
        (64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"),
        (65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"),
    ])
    func matchesSHA256SumWherePaddingSpillsIntoAnotherBlock(length: Int, digest: String) {
        #expect(Hex.encode(SHA256.hash(String(repeating: "a", count: length))) == digest)
    }

    // Computed with /usr/bin/sha256sum over bytes 0, 1, 2, … (mod 256) of that length.
    @Test(arguments: [
        (55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"),
        (56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"),
        (63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"),
        (64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"),
        (65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"),
        (119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"),
        (120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"),
        (128, "471fb943aa23c511f6f72f8d1652d9c880cfa392ad80503120547703e56a2be5"),
    ])
    func matchesSHA256SumForCountingBytes(length: Int, digest: String) {
        #expect(Hex.encode(SHA256.hash(countingBytes(length))) == digest)
    }

    @Test func matchesSHA256SumForEveryLengthUpTo200() {
        // The literal is sha256sum of the concatenated sha256sum digests of countingBytes(0...200),
        // so it pins all 201 digests at once.
        var digestOfDigests = SHA256()
        for length in 0...200 {
            digestOfDigests.update(SHA256.hash(countingBytes(length)))
        }
        #expect(Hex.encode(digestOfDigests.finalize()) == "64ef7c229fce2408b5336b6a542fea0e078c3a87d2da85cb3fc52e2008b65021")
    }

    @Test func streamingAtEverySplitPointMatchesOneShotForLengthsUpTo200() {
        for length in 0...200 {
            let message = countingBytes(length)
            let expected = SHA256.hash(message)

            var byteByByte = SHA256()
            for byte in message {
                byteByByte.update(CollectionOfOne(byte))
            }
            #expect(byteByByte.finalize() == expected, "byte by byte, length \(length)")

            for split in 0...length {
                var hasher = SHA256()
                hasher.update(message[..<split])
                hasher.update(message[split...])
                #expect(hasher.finalize() == expected, "length \(length) split at \(split)")
            }
        }
    }

    @Test func streamingInRandomChunksMatchesOneShot() {
        var random = SplitMix64(seed: 0x5EED_5A17)
        for trial in 0..<20 {
            let message = (0..<Int.random(in: 0...20_000, using: &random)).map { _ in
                UInt8.random(in: 0...255, using: &random)
            }
            var hasher = SHA256()
            var chunkSizes: [Int] = []
            var offset = 0
            while offset < message.count {
                let size = min(Int.random(in: 0...300, using: &random), message.count - offset)
                chunkSizes.append(size)
                hasher.update(message[offset..<(offset + size)])
                offset += size
            }
            #expect(hasher.finalize() == SHA256.hash(message), "trial \(trial), chunks \(chunkSizes)")
        }
    }

    @Test func hashesAnUploadFedInSocketSizedChunks() {
        // 3 MiB + 17 bytes of (index mod 251); the literal is from /usr/bin/sha256sum.
        let upload = (0..<(3 * 1_048_576 + 17)).map { UInt8(truncatingIfNeeded: $0 % 251) }
        var hasher = SHA256()
        var offset = 0
        while offset < upload.count {
            let end = min(offset + 65_536, upload.count)
            upload[offset..<end].withUnsafeBytes { hasher.update($0) }
            offset = end
        }
        #expect(Hex.encode(hasher.finalize()) == "fe2aaf82bfa2ffec207a0c6fa7ce7d4af268d67e2672fdaec675f3f9b65d0854")
    }

    @Test func hashesTheUTF8OfAString() {
        let text = "Grüße, 世界 🌍"
        var hasher = SHA256()
        hasher.update(text)
        #expect(hasher.finalize() == SHA256.hash(Array(text.utf8)))
        #expect(SHA256.hash(text) == SHA256.hash(Array(text.utf8)))
    }

    @Test func copyingAHasherMidStreamForksIt() {
        var original = SHA256()
        original.update("abcdbcdecdefdefgefghfghighij")
        var fork = original
        fork.update("hijkijkljklmklmnlmnomnopnopq")
        original.update("-different-tail")
        #expect(Hex.encode(fork.finalize()) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(original.finalize() == SHA256.hash("abcdbcdecdefdefgefghfghighij-different-tail"))
    }

    @Test func emptyUpdatesChangeNothing() {
        var hasher = SHA256()
        hasher.update(UnsafeRawBufferPointer(start: nil, count: 0))
        hasher.update([UInt8]())
        hasher.update("")
        hasher.update("abc")
        hasher.update(EmptyCollection<UInt8>())
        #expect(Hex.encode(hasher.finalize()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    private func countingBytes(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0) }
    }
}
