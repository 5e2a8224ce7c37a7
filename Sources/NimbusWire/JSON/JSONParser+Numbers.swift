extension JSONParser {
    /// Parses the number at `offset` (RFC 8259 §6 grammar, exactly):
    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    ///
    /// Without fraction or exponent and within `Int64` it is an `.integer` (`-0` included, as 0).
    /// Anything else is a correctly rounded `.double`: exactly by Clinger's fast path when the
    /// significand has at most 15 digits and the power of ten is at most 22 (both exact doubles,
    /// so one IEEE operation rounds once), otherwise by the standard library's strtod.
    mutating func parseNumber() throws(ParseError) -> JSONValue {
        let start = offset
        var index = offset
        let isNegative = input[index] == UInt8(ascii: "-")
        if isNegative { index += 1 }

        var significand: UInt64 = 0
        var significantDigits = 0
        var isTruncated = false
        @inline(__always) func accumulate(_ byte: UInt8) {
            let digit = UInt64(byte &- UInt8(ascii: "0"))
            if significand == 0 && digit == 0 { return }       // leading zeros carry no digits
            if significantDigits < 19 {                        // 19 digits always fit a UInt64
                significand = significand &* 10 &+ digit
                significantDigits += 1
            } else {
                isTruncated = true
            }
        }

        guard index < input.count, isDigit(input[index]) else {
            throw ParseError(offset: index, reason: "invalid number, expected a digit")
        }
        if input[index] == UInt8(ascii: "0") {
            index += 1
            if index < input.count, isDigit(input[index]) {
                throw ParseError(offset: start, reason: "invalid number, leading zeros are not allowed")
            }
        } else {
            while index < input.count, isDigit(input[index]) {
                accumulate(input[index])
                index += 1
            }
        }

        var isInteger = true
        var fractionDigits = 0
        if index < input.count, input[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < input.count, isDigit(input[index]) else {
                throw ParseError(offset: index, reason: "invalid number, expected a digit after '.'")
            }
            while index < input.count, isDigit(input[index]) {
                accumulate(input[index])
                fractionDigits += 1
                index += 1
            }
        }

        var exponent = 0
        var isExponentSaturated = false
        if index < input.count, input[index] | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            index += 1
            var isExponentNegative = false
            if index < input.count, input[index] == UInt8(ascii: "+") || input[index] == UInt8(ascii: "-") {
                isExponentNegative = input[index] == UInt8(ascii: "-")
                index += 1
            }
            guard index < input.count, isDigit(input[index]) else {
                throw ParseError(offset: index, reason: "invalid number, expected a digit in the exponent")
            }
            while index < input.count, isDigit(input[index]) {
                // Saturate rather than overflow; a saturated exponent sends the number to strtod,
                // which reads the exact lexeme.
                if exponent < 1_000_000 {
                    exponent = exponent * 10 + Int(input[index] - UInt8(ascii: "0"))
                } else {
                    isExponentSaturated = true
                }
                index += 1
            }
            if isExponentNegative { exponent = -exponent }
        }
        offset = index

        if isInteger && !isTruncated {
            if !isNegative, significand <= UInt64(Int64.max) {
                return .integer(Int64(significand))
            }
            if isNegative, significand <= Int64.min.magnitude {
                return .integer(Int64(truncatingIfNeeded: 0 &- significand))
            }
        }

        let powerOfTen = exponent - fractionDigits
        if !isTruncated, !isExponentSaturated, significantDigits <= 15, (-22...22).contains(powerOfTen) {
            var value = Double(significand)
            if powerOfTen < 0 {
                value /= Self.exactPowersOfTen[-powerOfTen]
            } else {
                value *= Self.exactPowersOfTen[powerOfTen]
            }
            return .double(isNegative ? -value : value)
        }

        let lexeme = String(decoding: UnsafeBufferPointer(rebasing: input[start..<index]), as: UTF8.self)
        guard let value = Double(lexeme), value.isFinite else {
            throw ParseError(offset: start, reason: "number out of range")
        }
        return .double(value)
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    /// 10^0 ... 10^22: every one is exactly representable as a Double.
    private static let exactPowersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]
}
