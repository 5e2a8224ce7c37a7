/// Reed–Solomon error correction over GF(256) with the QR polynomial x⁸+x⁴+x³+x²+1 (0x11D),
/// generator roots α⁰…αⁿ⁻¹ (ISO/IEC 18004:2015 §7.5.2).
enum QRReedSolomon {
    private static let tables: (exp: [UInt8], log: [Int]) = {
        var exp = [UInt8](repeating: 0, count: 512)
        var log = [Int](repeating: 0, count: 256)
        var x = 1
        for i in 0..<255 {
            exp[i] = UInt8(x)
            log[x] = i
            x <<= 1
            if x & 0x100 != 0 { x ^= 0x11D }
        }
        for i in 255..<512 { exp[i] = exp[i - 255] }
        return (exp, log)
    }()

    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        guard a != 0, b != 0 else { return 0 }
        return tables.exp[tables.log[Int(a)] + tables.log[Int(b)]]
    }

    /// Coefficients of ∏(x − αⁱ), highest degree first, leading 1 omitted.
    static func generator(degree: Int) -> [UInt8] {
        var poly: [UInt8] = [1]
        for i in 0..<degree {
            var next = [UInt8](repeating: 0, count: poly.count + 1)
            for (j, c) in poly.enumerated() {
                next[j] ^= c
                next[j + 1] ^= multiply(c, tables.exp[i])
            }
            poly = next
        }
        return Array(poly.dropFirst())
    }

    /// The error-correction codewords of one block: the remainder of data·xⁿ divided by the generator.
    static func errorCorrection(for data: [UInt8], count: Int) -> [UInt8] {
        let generator = generator(degree: count)
        var remainder = [UInt8](repeating: 0, count: count)
        for byte in data {
            let factor = byte ^ remainder[0]
            remainder.removeFirst()
            remainder.append(0)
            for i in 0..<count { remainder[i] ^= multiply(generator[i], factor) }
        }
        return remainder
    }
}
