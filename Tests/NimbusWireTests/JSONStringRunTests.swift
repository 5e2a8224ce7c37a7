@testable import NimbusWire
import Testing

/// The eight-at-a-time scan of plain ASCII in strings (`JSONEscape.plainRun`), which the parser
/// and the page writer share: whatever needs attention is found at every offset from a word
/// boundary, in keys and values alike.
@Suite struct JSONStringRunTests {
    /// Bytes that end a plain run, with the string they parse to (nil: the text is refused).
    static let specials: [(bytes: [UInt8], parsed: String?)] = [
        (Array(#"\""#.utf8), "\""), (Array(#"\\"#.utf8), "\\"), (Array(#"\n"#.utf8), "\n"), (Array(#"\u0041"#.utf8), "A"),
        (Array("é".utf8), "é"), (Array("€".utf8), "€"), (Array("😀".utf8), "😀"), ([0x7F], "\u{7F}"),
        ([0x01], nil), ([0x1F], nil), ([0xFF], nil), ([0xC3], nil), ([0xED, 0xA0, 0x80], nil),
    ]

    @Test func theParserFindsEverySpecialByteWhereverItFalls() throws {
        for (special, parsed) in Self.specials {
            for before in 0..<18 {
                for after in [0, 1, 7, 8, 9] {
                    let text = [UInt8(ascii: "\"")] + Array(repeating: UInt8(ascii: "a"), count: before) + special
                        + Array(repeating: UInt8(ascii: "b"), count: after) + [UInt8(ascii: "\"")]
                    let expected = parsed.map { String(repeating: "a", count: before) + $0 + String(repeating: "b", count: after) }
                    let value = try? JSONValue.parse(text)
                    #expect(value == expected.map(JSONValue.string), "\(special) after \(before)")
                    // The same string as an object's key.
                    let object = Array("{".utf8) + text + Array(":1}".utf8)
                    #expect((try? JSONValue.parse(object))?.objectValue?.keys.first == expected, "key: \(special) after \(before)")
                }
            }
        }
    }

    @Test func plainTextOfEveryLengthParsesToItself() throws {
        for length in 0..<40 {
            let bytes: [UInt8] = (0..<length).map { index in
                let byte = UInt8(0x20 + index % 90)
                return byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") ? UInt8(ascii: "A") : byte
            }
            let plain = String(decoding: bytes, as: UTF8.self)
            #expect(try JSONValue.parse(Array(("\"" + plain + "\"").utf8)) == .string(plain))
        }
    }
}
