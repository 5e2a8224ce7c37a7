/// Percent-decoding of a URI component (RFC 3986 §2.1): `%` and two hex digits stand for one
/// byte. The one decoder of query values and path parameters.
enum PercentDecoding {
    /// The bytes `text` stands for. With `plusIsSpace` (form-encoded query values) `+` is a space.
    /// A `%` not followed by two hex digits makes the result nil when `strict`, else it is kept as
    /// written.
    static func decode(_ text: Substring.UTF8View, plusIsSpace: Bool, strict: Bool) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count)
        var index = text.startIndex
        while index != text.endIndex {
            let byte = text[index]
            text.formIndex(after: &index)
            switch byte {
            case UInt8(ascii: "+") where plusIsSpace:
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                if index != text.endIndex, let high = hexValue(text[index]),
                   text.index(after: index) != text.endIndex, let low = hexValue(text[text.index(after: index)]) {
                    bytes.append(high << 4 | low)
                    index = text.index(index, offsetBy: 2)
                } else if strict {
                    return nil
                } else {
                    bytes.append(byte)
                }
            default:
                bytes.append(byte)
            }
        }
        return bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// A path segment's text: percent-decoded and valid UTF-8 without NUL (no name holds one, and
    /// PostgreSQL's text cannot), else nil (`+` is itself in a path).
    static func pathSegment(_ segment: Substring.UTF8View) -> String? {
        guard segment.contains(UInt8(ascii: "%")) else { return String(Substring(segment)) }
        guard let bytes = decode(segment, plusIsSpace: false, strict: true), !bytes.contains(0) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}
