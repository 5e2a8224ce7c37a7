import NimbusWire
import Testing

@Suite struct JSONPageWriterTests {
    /// The bytes `JSONWriter` writes for the same pieces.
    private func reference(_ build: (inout JSONWriter) -> Void) -> [UInt8] {
        var writer = JSONWriter(sortedKeys: false)
        build(&writer)
        return writer.bytes
    }

    @Test func writesIntegersAsJSONWriterAndChangeTagsAsBase36() {
        for value: Int64 in [0, 7, -7, 9, 10, -10, 35, 36, 99, 100, 1_795_000_000_123, .max, .min, .max - 1, .min + 1] {
            var page = JSONPageWriter()
            page.write(value)
            #expect(page.finish() == reference { $0.write(value) }, "\(value)")
            var tag = JSONPageWriter()
            tag.writeBase36(value)
            #expect(tag.finish() == Array(String(value, radix: 36).utf8), "\(value)")
        }
    }

    /// Every escape at every offset from a word boundary, and text with none (the eight-at-a-time
    /// scan), against JSONWriter's byte-at-a-time escaping.
    @Test func escapesStringsAsJSONWriterWhereverTheEscapeFalls() {
        let specials: [UInt8] = [0x22, 0x5C, 0x00, 0x08, 0x09, 0x0A, 0x0C, 0x0D, 0x1F, 0x7F, 0x21, 0x5B, 0x5D, 0x20, 0xC3]
        for length in 0...25 {
            for position in 0..<max(length, 1) {
                for special in specials {
                    var bytes = Array(repeating: UInt8(ascii: "a"), count: length)
                    if position < length { bytes[position] = special }
                    if special == 0xC3, position + 1 < length { bytes[position + 1] = 0xA9 } else if special == 0xC3 { continue }
                    var page = JSONPageWriter(capacity: 1)
                    bytes.withUnsafeBytes { page.write(utf8: $0) }
                    let expected = reference { writer in bytes.withUnsafeBufferPointer { writer.write(utf8: $0) } }
                    #expect(page.finish() == expected, "\(bytes)")
                }
            }
        }
    }

    @Test func growsPastItsCapacityKeepingEveryByte() {
        var page = JSONPageWriter(capacity: 8)
        var expected: [UInt8] = []
        for index in 0..<2_000 {
            page.append(byte: UInt8(ascii: index % 2 == 0 ? "[" : "]"))
            page.append(#","key":"#)
            page.write("value \(index)")
            expected += Array((index % 2 == 0 ? "[" : "]").utf8) + Array(#","key":"#.utf8) + Array("\"value \(index)\"".utf8)
        }
        let raw: [UInt8] = Array(#"{"a":1}"#.utf8)
        raw.withUnsafeBytes { page.append(raw: $0) }
        expected += raw
        #expect(page.count == expected.count)
        #expect(page.finish() == expected)
    }
}
