/// Base64 with the URL- and filename-safe alphabet (RFC 4648 §5), for values that travel in URLs,
/// headers and JSON: tokens, change tags, asset identifiers. `-` and `_` stand for 62 and 63, where
/// standard base64 (Foundation's `Data.base64EncodedString`) uses `+` and `/`.
///
/// Encoding emits no `=` padding. Decoding accepts input with or without padding and is strict, so
/// every byte string has exactly one accepted encoding up to padding.
package enum Base64URL {
    /// The RFC 4648 §5 alphabet, indexed by 6-bit value.
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Maps an ASCII byte to its 6-bit value; every other byte (including `+`, `/` and `=`) maps to
    /// `invalid`, which has a high bit no 6-bit value has.
    private static let values: [UInt8] = {
        var values = [UInt8](repeating: invalid, count: 256)
        for (value, character) in alphabet.enumerated() {
            values[Int(character)] = UInt8(value)
        }
        return values
    }()

    private static let invalid: UInt8 = 0xFF
    private static let padding = UInt8(ascii: "=")

    /// The unpadded base64url encoding of `bytes`.
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        if let encoded = bytes.withContiguousStorageIfAvailable(encode) {
            return encoded
        }
        return Array(bytes).withUnsafeBufferPointer(encode)
    }

    /// The bytes `string` encodes, or nil if it holds a character outside the alphabet, padding
    /// anywhere but at a complete final quantum, a length no encoding has, or non-zero pad bits.
    package static func decode(_ string: some StringProtocol) -> [UInt8]? {
        if let decoded = string.utf8.withContiguousStorageIfAvailable(decode) {
            return decoded
        }
        return Array(string.utf8).withUnsafeBufferPointer(decode)
    }

    private static func encode(_ input: UnsafeBufferPointer<UInt8>) -> String {
        let wholeGroups = input.count / 3
        let remainder = input.count % 3
        let outputCount = wholeGroups * 4 + (remainder == 0 ? 0 : remainder + 1)
        return String(unsafeUninitializedCapacity: outputCount) { output in
            var inputIndex = 0
            var outputIndex = 0
            func emit(_ value: UInt32) {
                output[outputIndex] = alphabet[Int(value & 0x3F)]
                outputIndex += 1
            }
            for _ in 0..<wholeGroups {
                let group = UInt32(input[inputIndex]) << 16 | UInt32(input[inputIndex + 1]) << 8 | UInt32(input[inputIndex + 2])
                inputIndex += 3
                emit(group >> 18)
                emit(group >> 12)
                emit(group >> 6)
                emit(group)
            }
            if remainder == 1 {
                let group = UInt32(input[inputIndex]) << 16
                emit(group >> 18)
                emit(group >> 12)
            } else if remainder == 2 {
                let group = UInt32(input[inputIndex]) << 16 | UInt32(input[inputIndex + 1]) << 8
                emit(group >> 18)
                emit(group >> 12)
                emit(group >> 6)
            }
            return outputIndex
        }
    }

    private static func decode(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var count = input.count
        if count > 0, input[count - 1] == padding {
            // RFC 4648 §3.2: padding, when present, completes the final 4-character quantum. At most
            // two `=` are stripped here; any other `=` fails the alphabet lookup below.
            guard count % 4 == 0 else { return nil }
            count -= 1
            if input[count - 1] == padding {
                count -= 1
            }
        }
        let wholeQuanta = count / 4
        let remainder = count % 4
        // A single trailing character carries 6 bits, too few for a byte.
        guard remainder != 1 else { return nil }

        func value(at index: Int) -> UInt32 { UInt32(values[Int(input[index])]) }

        var isValid = true
        let outputCount = wholeQuanta * 3 + (remainder == 0 ? 0 : remainder - 1)
        let output = [UInt8](unsafeUninitializedCapacity: outputCount) { output, initializedCount in
            var outputIndex = 0
            var inputIndex = 0
            var seen: UInt32 = 0
            for _ in 0..<wholeQuanta {
                let a = value(at: inputIndex), b = value(at: inputIndex + 1)
                let c = value(at: inputIndex + 2), d = value(at: inputIndex + 3)
                inputIndex += 4
                seen |= a | b | c | d
                let group = a << 18 | b << 12 | c << 6 | d
                output[outputIndex] = UInt8(truncatingIfNeeded: group >> 16)
                output[outputIndex + 1] = UInt8(truncatingIfNeeded: group >> 8)
                output[outputIndex + 2] = UInt8(truncatingIfNeeded: group)
                outputIndex += 3
            }
            if remainder >= 2 {
                let a = value(at: inputIndex), b = value(at: inputIndex + 1)
                let c = remainder == 3 ? value(at: inputIndex + 2) : 0
                seen |= a | b | c
                let group = a << 18 | b << 12 | c << 6
                // RFC 4648 §3.5: the bits below the last whole byte must be zero, so that no two
                // strings decode to the same bytes.
                let padBits = remainder == 2 ? group & 0xFFFF : group & 0xFF
                if padBits != 0 { isValid = false }
                output[outputIndex] = UInt8(truncatingIfNeeded: group >> 16)
                outputIndex += 1
                if remainder == 3 {
                    output[outputIndex] = UInt8(truncatingIfNeeded: group >> 8)
                    outputIndex += 1
                }
            }
            // Only `invalid` has bits above the low six.
            if seen & ~0x3F != 0 { isValid = false }
            initializedCount = outputIndex
        }
        return isValid ? output : nil
    }
}

/// Lower-case hexadecimal (RFC 4648 §8, base16), for digests in logs, ETags and the CLI.
package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// The lower-case hexadecimal encoding of `bytes`, two characters per byte.
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes `string` encodes (either case), or nil on an odd length or a non-hex character.
    package static func decode(_ string: some StringProtocol) -> [UInt8]? {
        let characters = string.utf8
        guard characters.count % 2 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(characters.count / 2)
        var high: UInt8?
        for character in characters {
            guard let nibble = nibble(character) else { return nil }
            if let pendingHigh = high {
                output.append(pendingHigh << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return output
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
