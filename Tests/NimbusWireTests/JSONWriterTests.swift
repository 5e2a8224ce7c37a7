import NimbusWire
import NimbusSupport  // SplitMix64
import Testing

@Suite struct JSONWriterTests {
    @Test func writesIntegersAtTheirExtremes() {
        for value: Int64 in [0, 7, -7, 10, -10, 1_795_000_000_123, .max, .min, .max - 1, .min + 1] {
            #expect(JSONValue.integer(value).serialized() == Array(String(value).utf8))
        }
    }

    @Test func writesCompactlyInMemberOrder() {
        let value: JSONValue = ["b": [1, 2, ["c": .null]], "a": true, "e": [], "o": .object([:])]
        #expect(value.serializedString == #"{"b":[1,2,{"c":null}],"a":true,"e":[],"o":{}}"#)
    }

    @Test func sortedKeysOrdersMembersByUTF8BytesAtEveryLevel() {
        let value: JSONValue = ["é": 0, "b": ["z": 1, "y": [["q": 1, "p": 2]]], "a": 1, "Z": 0, "aa": 2]
        let expected = #"{"Z":0,"a":1,"aa":2,"b":{"y":[{"p":2,"q":1}],"z":1},"é":0}"#
        #expect(String(decoding: value.serialized(sortedKeys: true), as: UTF8.self) == expected)
        #expect(value.serializedString == #"{"é":0,"b":{"z":1,"y":[{"q":1,"p":2}]},"a":1,"Z":0,"aa":2}"#)
    }

    @Test func escapesQuoteBackslashAndControlCharactersOnly() {
        let value = JSONValue.string("q\"b\\s/n\nr\rt\tb\u{8}f\u{C}z\u{0}u\u{1F}d\u{7F}é😀\u{2028}")
        let expected = #""q\"b\\s/n\nr\rt\tb\bf\fz\u0000u\u001fd"# + "\u{7F}é😀\u{2028}\""
        #expect(value.serializedString == expected)
    }

    @Test func escapesKeysLikeValues() {
        let value: JSONValue = ["a\"\n": 1]
        #expect(value.serializedString == #"{"a\"\n":1}"#)
    }

    @Test func writesIntegersInDecimal() {
        let values: [JSONValue] = [0, -1, 42, .integer(.max), .integer(.min)]
        #expect(JSONValue.array(values).serializedString == "[0,-1,42,9223372036854775807,-9223372036854775808]")
    }

    @Test func writesDoublesSoTheyStayDoubles() {
        let cases: [(Double, String)] = [
            (3, "3.0"), (-0.0, "-0.0"), (0.1, "0.1"), (1e20, "1e+20"), (1e-5, "1e-05"),
            (.leastNonzeroMagnitude, "5e-324"), (.greatestFiniteMagnitude, "1.7976931348623157e+308"),
            (9223372036854775808, "9.223372036854776e+18"), (-2.5, "-2.5"),
        ]
        for (double, text) in cases {
            #expect(JSONValue.double(double).serializedString == text)
        }
    }

    @Test func writesNonFiniteDoublesAsNull() {
        #expect(JSONValue.array([.double(.infinity), .double(-.infinity), .double(.nan)]).serializedString == "[null,null,null]")
    }

    @Test func writeToAppendsToExistingBytes() {
        var bytes = Array("prefix:".utf8)
        JSONValue.array([1, "x"]).write(to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == #"prefix:[1,"x"]"#)
    }

    @Test func roundTripsRandomValues() throws {
        var random = SplitMix64(seed: 0x5EED_0002)
        for _ in 0..<3000 {
            let value = random.jsonValue(depth: 4)
            let bytes = value.serialized()
            let parsed = try JSONValue.parse(bytes, limits: .init(maxDepth: 16))
            #expect(parsed.isIdentical(to: value), "\(value)")
            #expect(parsed.serialized() == bytes)
            let sorted = value.serialized(sortedKeys: true)
            #expect(try JSONValue.parse(sorted).serialized(sortedKeys: true) == sorted)
        }
    }

    @Test func roundTripsEveryClassOfDouble() throws {
        var random = SplitMix64(seed: 0x5EED_0003)
        var doubles: [Double] = [0, -0.0, 1, -1, 3, 0.1, 1e22, 1e23, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, 2.2250738585072014e-308,
                                 .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 9007199254740991, 1e15, 1e16]
        for _ in 0..<5000 {
            let double = Double(bitPattern: random.next())
            if double.isFinite { doubles.append(double) }
        }
        for double in doubles {
            let parsed = try JSONValue.parse(JSONValue.double(double).serialized())
            guard case .double(let back) = parsed else {
                Issue.record("\(double) came back as \(parsed)")
                continue
            }
            #expect(back.bitPattern == double.bitPattern, "\(double)")
        }
    }
}

// MARK: Test support

/// Equality by bits and bytes: doubles by bit pattern (so -0.0 differs from 0.0) and strings by
/// their UTF-8 (Swift's `==` treats canonically equivalent strings as equal).
extension JSONValue {
    func isIdentical(to other: JSONValue) -> Bool {
        switch (self, other) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.integer(let a), .integer(let b)): return a == b
        case (.double(let a), .double(let b)): return a.bitPattern == b.bitPattern
        case (.string(let a), .string(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isIdentical(to: $1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key.utf8.elementsEqual($1.key.utf8) && $0.value.isIdentical(to: $1.value) }
        default: return false
        }
    }
}

extension SplitMix64 {
    mutating func digits(count: Int, leadingNonZero: Bool) -> String {
        var text = ""
        for index in 0..<count {
            let digit = index == 0 && leadingNonZero ? Int.random(in: 1...9, using: &self) : Int.random(in: 0...9, using: &self)
            text += String(digit)
        }
        return text
    }

    /// A string mixing ASCII (controls, quotes and backslashes included), Latin, CJK, combining
    /// marks and astral scalars.
    mutating func string() -> String {
        let ranges: [ClosedRange<UInt32>] = [0x00...0x7F, 0x20...0x7E, 0x80...0x7FF, 0x4E00...0x9FFF, 0x0300...0x036F,
                                             0xE000...0xFFFF, 0x1F600...0x1F64F, 0x10000...0x10FFFF]
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...12, using: &self) {
            let range = ranges.randomElement(using: &self)!
            if let scalar = Unicode.Scalar(UInt32.random(in: range, using: &self)) {
                scalars.append(scalar)
            }
        }
        return String(scalars)
    }

    mutating func jsonValue(depth: Int) -> JSONValue {
        switch Int.random(in: 0..<(depth > 0 ? 9 : 6), using: &self) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &self))
        case 2:
            let magnitude = [Int64.max, 1 << 53, 100_000, 100].randomElement(using: &self)!
            return .integer(Int64.random(in: -magnitude...magnitude, using: &self))
        case 3:
            let double = Double(bitPattern: next())
            return .double(double.isFinite ? double : Double(Int.random(in: -1000...1000, using: &self)))
        case 4: return .double(Double(Int.random(in: -1_000_000...1_000_000, using: &self)) / 100)
        case 5: return .string(string())
        case 6, 7:
            return .array((0..<Int.random(in: 0...5, using: &self)).map { _ in jsonValue(depth: depth - 1) })
        default:
            var object = JSONObject()
            for _ in 0..<Int.random(in: 0...(Bool.random(using: &self) ? 4 : 20), using: &self) {
                object[string()] = jsonValue(depth: depth - 1)
            }
            return .object(object)
        }
    }
}
