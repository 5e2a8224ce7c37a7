/// A QR Code symbol (ISO/IEC 18004:2015) in byte mode at error-correction level M: what
/// `nimbus device pair` draws for a pairing URL. Versions 1–15 (up to 410 bytes).
///
/// The construction follows the standard's steps: data bits (§7.4), Reed–Solomon blocks and
/// interleaving (§7.5–7.6), function patterns (§6.3), codeword placement (§7.7.3), the mask
/// with the lowest penalty (§7.8) and format and version information (§7.9–7.10).
package struct QRCode: Sendable, Equatable {
    package let version: QRVersion
    package let mask: Int
    /// Rows of modules, `true` for dark.
    package let modules: [[Bool]]

    package var size: Int { version.size }

    package enum Failure: Error, Equatable {
        case tooLong(bytes: Int, capacity: Int)
    }

    /// Encodes `text` as UTF-8 bytes; `mask` forces a mask pattern (0–7) instead of the best one.
    package init(text: String, mask forcedMask: Int? = nil) throws(Failure) {
        try self.init(bytes: Array(text.utf8), mask: forcedMask)
    }

    package init(bytes: [UInt8], mask forcedMask: Int? = nil) throws(Failure) {
        guard let version = QRVersion.smallest(holding: bytes.count) else {
            throw .tooLong(bytes: bytes.count, capacity: QRVersion.all.last?.byteCapacity ?? 0)
        }
        self.version = version
        var matrix = QRMatrix(version: version)
        matrix.place(QRCode.codewords(bytes, version: version))
        var best: (mask: Int, modules: [[Bool]], penalty: Int)?
        for candidate in forcedMask.map({ [$0] }) ?? Array(0..<8) {
            var masked = matrix
            masked.applyMask(candidate)
            masked.drawFormat(mask: candidate)
            let penalty = QRPenalty.score(masked.modules)
            if best == nil || penalty < best?.penalty ?? Int.max { best = (candidate, masked.modules, penalty) }
        }
        mask = best?.mask ?? 0
        modules = best?.modules ?? matrix.modules
    }

    /// The final codeword sequence: data in byte mode, padded, split into blocks, each followed
    /// by its error correction, interleaved.
    static func codewords(_ bytes: [UInt8], version: QRVersion) -> [UInt8] {
        var bits = QRBitBuffer()
        bits.append(0b0100, count: 4)  // byte mode
        bits.append(bytes.count, count: version.countBits)
        for byte in bytes { bits.append(Int(byte), count: 8) }
        let capacity = version.dataCodewords * 8
        bits.append(0, count: min(4, capacity - bits.count))  // terminator
        bits.append(0, count: (8 - bits.count % 8) % 8)
        var data = bits.bytes
        var pad: UInt8 = 0xEC
        while data.count < version.dataCodewords {
            data.append(pad)
            pad = pad == 0xEC ? 0x11 : 0xEC
        }
        var blocks: [[UInt8]] = []
        var offset = 0
        for length in version.blockDataCodewords {
            blocks.append(Array(data[offset..<offset + length]))
            offset += length
        }
        let corrections = blocks.map { QRReedSolomon.errorCorrection(for: $0, count: version.ecCodewordsPerBlock) }
        var result: [UInt8] = []
        for i in 0..<(version.blockDataCodewords.max() ?? 0) {
            for block in blocks where i < block.count { result.append(block[i]) }
        }
        for i in 0..<version.ecCodewordsPerBlock {
            for correction in corrections { result.append(correction[i]) }
        }
        return result
    }

    /// The 15 format bits for level M and a mask (§7.9.1): BCH(15,5), XOR 0x5412.
    static func formatBits(mask: Int) -> Int {
        let data = (0b00 << 3) | mask  // level M is 00
        var remainder = data
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        return ((data << 10) | remainder) ^ 0x5412
    }

    /// The 18 version bits (§7.10): BCH(18,6).
    static func versionBits(_ version: Int) -> Int {
        var remainder = version
        for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
        return (version << 12) | remainder
    }
}

/// Bits appended most significant first.
struct QRBitBuffer {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    mutating func append(_ value: Int, count length: Int) {
        guard length > 0 else { return }
        for shift in stride(from: length - 1, through: 0, by: -1) {
            if count % 8 == 0 { bytes.append(0) }
            if (value >> shift) & 1 == 1 { bytes[bytes.count - 1] |= UInt8(0x80 >> (count % 8)) }
            count += 1
        }
    }
}
