/// The shape of one QR Code version at error-correction level M (ISO/IEC 18004:2015, tables 7
/// and 9; alignment positions from annex E): what the encoder needs for versions 1–15, enough for
/// a pairing URL of up to 410 bytes.
package struct QRVersion: Sendable, Equatable {
    package let number: Int
    /// Error-correction codewords per block.
    let ecCodewordsPerBlock: Int
    /// Data codewords of each block, in order (group 1 blocks, then group 2).
    let blockDataCodewords: [Int]
    /// Centres of alignment patterns, rows and columns alike.
    let alignmentCentres: [Int]

    package var size: Int { 17 + 4 * number }
    package var dataCodewords: Int { blockDataCodewords.reduce(0, +) }
    /// Bytes of data that fit in byte mode (4 bits of mode, 8 or 16 of count, the rest data).
    package var byteCapacity: Int { (dataCodewords * 8 - 4 - countBits) / 8 }
    var countBits: Int { number < 10 ? 8 : 16 }
    /// Bits left over after the last codeword (table 1).
    var remainderBits: Int {
        switch number {
        case 2...6: return 7
        case 14...20: return 3
        default: return 0
        }
    }

    private static func make(_ n: Int, _ ec: Int, _ g1: (Int, Int), _ g2: (Int, Int) = (0, 0), _ align: [Int]) -> QRVersion {
        QRVersion(number: n, ecCodewordsPerBlock: ec,
                  blockDataCodewords: Array(repeating: g1.1, count: g1.0) + Array(repeating: g2.1, count: g2.0),
                  alignmentCentres: align)
    }

    /// Versions 1–15 at level M.
    package static let all: [QRVersion] = [
        make(1, 10, (1, 16), align: []),
        make(2, 16, (1, 28), align: [6, 18]),
        make(3, 26, (1, 44), align: [6, 22]),
        make(4, 18, (2, 32), align: [6, 26]),
        make(5, 24, (2, 43), align: [6, 30]),
        make(6, 16, (4, 27), align: [6, 34]),
        make(7, 18, (4, 31), align: [6, 22, 38]),
        make(8, 22, (2, 38), (2, 39), [6, 24, 42]),
        make(9, 22, (3, 36), (2, 37), [6, 26, 46]),
        make(10, 26, (4, 43), (1, 44), [6, 28, 50]),
        make(11, 30, (1, 50), (4, 51), [6, 30, 54]),
        make(12, 22, (6, 36), (2, 37), [6, 32, 58]),
        make(13, 22, (8, 37), (1, 38), [6, 34, 62]),
        make(14, 24, (4, 40), (5, 41), [6, 26, 46, 66]),
        make(15, 24, (5, 41), (5, 42), [6, 26, 48, 70]),
    ]

    private static func make(_ n: Int, _ ec: Int, _ g1: (Int, Int), align: [Int]) -> QRVersion {
        make(n, ec, g1, (0, 0), align)
    }

    /// Total codewords per version (table 1), to check the block tables against.
    static let totalCodewords = [26, 44, 70, 100, 134, 172, 196, 242, 292, 346, 404, 466, 532, 581, 655]

    /// The smallest version whose byte mode holds `count` bytes.
    package static func smallest(holding count: Int) -> QRVersion? {
        all.first { $0.byteCapacity >= count }
    }
}
