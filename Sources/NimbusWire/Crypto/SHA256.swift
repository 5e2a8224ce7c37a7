/// SHA-256 as specified by FIPS 180-4: asset checksums (uploads of up to 50 MiB are hashed chunk by
/// chunk as they arrive, never held whole) and, through `HMACSHA256`, token signatures.
///
/// Streaming: call `update` any number of times, then `finalize()` once. Whole 64-byte blocks are
/// compressed straight from the caller's buffer; only the trailing partial block of an update is
/// copied, into a 64-byte carry-over that lives inline in the struct (no heap allocation per hasher,
/// and copying a hasher mid-stream, as HMAC does, copies its state).
package struct SHA256: Sendable {
    /// Length of a digest in bytes.
    package static let digestByteCount = 32
    /// Length of a block in bytes: the `B` of RFC 2104 when SHA-256 is used in HMAC.
    package static let blockByteCount = 64

    /// 64 bytes held as a tuple so the carry-over buffer is stored inline.
    fileprivate typealias Block = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    private var state = State()
    /// Bytes of an incomplete block carried between updates; only the first `pendingCount` matter.
    private var pending: Block = (0, 0, 0, 0, 0, 0, 0, 0)
    private var pendingCount = 0
    /// Message length so far in bytes. FIPS 180-4 §5.1.1 appends the length in bits as a 64-bit
    /// number, so wrapping is the specified behaviour (and unreachable below 2 EiB).
    private var byteCount: UInt64 = 0

    package init() {}

    /// Hashes the bytes in `bytes`. Whole blocks are read in place.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        // An empty buffer may have a nil base address.
        guard var base = bytes.baseAddress, bytes.count > 0 else { return }
        var remaining = bytes.count
        byteCount &+= UInt64(remaining)

        if pendingCount > 0 {
            // Complete the carried-over block first. Copy the offset out of `self` so the closure
            // below does not overlap the exclusive access to `pending`.
            let offset = pendingCount
            let taken = min(Self.blockByteCount - offset, remaining)
            withUnsafeMutableBytes(of: &pending) { block in
                (block.baseAddress! + offset).copyMemory(from: base, byteCount: taken)
            }
            pendingCount += taken
            base += taken
            remaining -= taken
            guard pendingCount == Self.blockByteCount else { return }
            let block = pending
            withUnsafeBytes(of: block) { state.compress($0) }
            pendingCount = 0
        }

        let wholeBlockBytes = remaining & ~(Self.blockByteCount - 1)
        if wholeBlockBytes > 0 {
            state.compress(UnsafeRawBufferPointer(start: base, count: wholeBlockBytes))
            base += wholeBlockBytes
            remaining -= wholeBlockBytes
        }

        if remaining > 0 {
            withUnsafeMutableBytes(of: &pending) { block in
                block.baseAddress!.copyMemory(from: base, byteCount: remaining)
            }
            pendingCount = remaining
        }
    }

    /// Hashes a sequence of bytes. Arrays, array slices and other contiguous collections are read in
    /// place; any other sequence is staged through a small stack buffer.
    package mutating func update(_ bytes: some Sequence<UInt8>) {
        let wasContiguous: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            update(UnsafeRawBufferPointer(buffer))
        }
        guard wasContiguous == nil else { return }

        let stagingByteCount = 1024
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: stagingByteCount) { staging in
            var staged = 0
            for byte in bytes {
                staging[staged] = byte
                staged += 1
                if staged == stagingByteCount {
                    update(UnsafeRawBufferPointer(staging))
                    staged = 0
                }
            }
            update(UnsafeRawBufferPointer(start: staging.baseAddress, count: staged))
        }
    }

    /// Hashes the UTF-8 encoding of `string`.
    package mutating func update(_ string: String) {
        var string = string
        string.withUTF8 { update(UnsafeRawBufferPointer($0)) }
    }

    /// Pads the message, processes the final block(s) and returns the 32-byte digest.
    package consuming func finalize() -> [UInt8] {
        // FIPS 180-4 §5.1.1: append a 1 bit, then zeros until the length is 56 mod 64 bytes, then the
        // message length in bits as a 64-bit big-endian integer.
        let bitLength = byteCount &* 8
        let zeroPaddedCount = pendingCount < 56 ? 56 - pendingCount : 120 - pendingCount
        var padding: (Block, Block) = ((0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0))
        withUnsafeMutableBytes(of: &padding) { bytes in
            bytes[0] = 0x80
            bytes.storeBytes(of: bitLength.bigEndian, toByteOffset: zeroPaddedCount, as: UInt64.self)
        }
        withUnsafeBytes(of: padding) { bytes in
            update(UnsafeRawBufferPointer(rebasing: bytes[..<(zeroPaddedCount + 8)]))
        }
        assert(pendingCount == 0, "padding must end on a block boundary")
        return state.digest()
    }

    /// The SHA-256 digest of `bytes`.
    package static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The SHA-256 digest of the UTF-8 encoding of `string`.
    package static func hash(_ string: String) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(string)
        return hasher.finalize()
    }
}

extension SHA256 {
    /// The eight working hash values H0…H7 (FIPS 180-4 §5.3.3 gives the initial ones).
    private struct State: Sendable {
        var h0: UInt32 = 0x6a09_e667
        var h1: UInt32 = 0xbb67_ae85
        var h2: UInt32 = 0x3c6e_f372
        var h3: UInt32 = 0xa54f_f53a
        var h4: UInt32 = 0x510e_527f
        var h5: UInt32 = 0x9b05_688c
        var h6: UInt32 = 0x1f83_d9ab
        var h7: UInt32 = 0x5be0_cd19

        /// Runs the compression function (FIPS 180-4 §6.2.2) over every block of `blocks`, whose
        /// count must be a multiple of 64. The message schedule lives in one stack allocation per
        /// call, and the working variables stay in locals for the whole run.
        mutating func compress(_ blocks: UnsafeRawBufferPointer) {
            precondition(blocks.count % SHA256.blockByteCount == 0, "compress takes whole blocks")
            guard let start = blocks.baseAddress else { return }
            let end = start + blocks.count
            var h0 = self.h0, h1 = self.h1, h2 = self.h2, h3 = self.h3
            var h4 = self.h4, h5 = self.h5, h6 = self.h6, h7 = self.h7

            SHA256.roundConstants.withUnsafeBufferPointer { k in
                withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                    var block = start
                    while block < end {
                        // §6.2.2 step 1: the message schedule. Input words are big-endian and the
                        // caller's buffer has no alignment guarantee.
                        for t in 0..<16 {
                            w[t] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: t &* 4, as: UInt32.self))
                        }
                        for t in 16..<64 {
                            let w15 = w[t &- 15], w2 = w[t &- 2]
                            let sigma0 = w15.rotatedRight(7) ^ w15.rotatedRight(18) ^ (w15 &>> 3)
                            let sigma1 = w2.rotatedRight(17) ^ w2.rotatedRight(19) ^ (w2 &>> 10)
                            w[t] = w[t &- 16] &+ sigma0 &+ w[t &- 7] &+ sigma1
                        }

                        // Steps 2 and 3: 64 rounds over the working variables.
                        var a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7
                        for t in 0..<64 {
                            let bigSigma1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                            let choose = (e & f) ^ (~e & g)
                            let t1 = h &+ bigSigma1 &+ choose &+ k[t] &+ w[t]
                            let bigSigma0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                            let majority = (a & b) ^ (a & c) ^ (b & c)
                            let t2 = bigSigma0 &+ majority
                            h = g
                            g = f
                            f = e
                            e = d &+ t1
                            d = c
                            c = b
                            b = a
                            a = t1 &+ t2
                        }

                        // Step 4: the intermediate hash value.
                        h0 &+= a
                        h1 &+= b
                        h2 &+= c
                        h3 &+= d
                        h4 &+= e
                        h5 &+= f
                        h6 &+= g
                        h7 &+= h
                        block += SHA256.blockByteCount
                    }
                }
            }

            self.h0 = h0
            self.h1 = h1
            self.h2 = h2
            self.h3 = h3
            self.h4 = h4
            self.h5 = h5
            self.h6 = h6
            self.h7 = h7
        }

        /// H0…H7 as 32 big-endian bytes (FIPS 180-4 §6.2.2, final step).
        func digest() -> [UInt8] {
            [UInt8](unsafeUninitializedCapacity: SHA256.digestByteCount) { buffer, initializedCount in
                let bytes = UnsafeMutableRawBufferPointer(buffer)
                for (index, word) in [h0, h1, h2, h3, h4, h5, h6, h7].enumerated() {
                    bytes.storeBytes(of: word.bigEndian, toByteOffset: index * 4, as: UInt32.self)
                }
                initializedCount = SHA256.digestByteCount
            }
        }
    }

    /// K0…K63: the first 32 bits of the fractional parts of the cube roots of the first 64 primes
    /// (FIPS 180-4 §4.2.2).
    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]
}

extension UInt32 {
    /// ROTR^n (FIPS 180-4 §3.2); the compiler lowers this to a single rotate instruction.
    @inline(__always)
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 {
        (self &>> count) | (self &<< (32 &- count))
    }
}
