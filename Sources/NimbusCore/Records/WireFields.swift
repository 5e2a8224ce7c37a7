/// Turns the text PostgreSQL prints for a record's stored fields into the bytes the API sends,
/// without building a tree: change feeds send hundreds of records a page, and parsing every
/// field only to write it again cost more than the rest of the request.
///
/// PostgreSQL prints jsonb with a space after every `:` and `,` and with object members sorted
/// by key length, so a stored field reads `{"type": "STRING", "value": "x"}`. The wire form is
/// compact with the value first, as `Record.json` writes it: `{"value":"x","type":"STRING"}`.
/// Values that hold objects (references, locations, assets) are not rewritten — their members
/// would come out in PostgreSQL's order, not the API's — and the answer is nil: decode them.
package enum WireFields {
    /// The wire form of stored fields printed by PostgreSQL, or nil when a value holds an object
    /// or the text is not the stored shape.
    package static func fromStored(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { bytes in
            var scanner = Scanner(bytes: bytes)
            return scanner.fields()
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        var output: [UInt8] = []

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
            output.reserveCapacity(bytes.count)
        }

        mutating func fields() -> [UInt8]? {
            guard take(UInt8(ascii: "{")) else { return nil }
            output.append(UInt8(ascii: "{"))
            if take(UInt8(ascii: "}")) {
                output.append(UInt8(ascii: "}"))
                return finished()
            }
            repeat {
                guard let name = string() else { return nil }
                output.append(contentsOf: bytes[name])
                output.append(UInt8(ascii: ":"))
                guard take(UInt8(ascii: ":")), field() else { return nil }
                if take(UInt8(ascii: "}")) {
                    output.append(UInt8(ascii: "}"))
                    return finished()
                }
                output.append(UInt8(ascii: ","))
            } while take(UInt8(ascii: ","))
            return nil
        }

        /// `{"type": T, "value": V}` (PostgreSQL's order: shorter keys first) → `{"value":V,"type":T}`.
        private mutating func field() -> Bool {
            guard take(UInt8(ascii: "{")), let typeKey = string(), matches(typeKey, #""type""#), take(UInt8(ascii: ":")),
                  let type = string(), take(UInt8(ascii: ",")),
                  let valueKey = string(), matches(valueKey, #""value""#), take(UInt8(ascii: ":")) else { return false }
            output.append(contentsOf: #"{"value":"#.utf8)
            guard scalarOrList(), take(UInt8(ascii: "}")) else { return false }
            output.append(contentsOf: #","type":"#.utf8)
            output.append(contentsOf: bytes[type])
            output.append(UInt8(ascii: "}"))
            return true
        }

        private func matches(_ range: Range<Int>, _ text: StaticString) -> Bool {
            guard range.count == text.utf8CodeUnitCount else { return false }
            let expected = text.utf8Start
            for offset in 0..<range.count where bytes[range.lowerBound + offset] != expected[offset] { return false }
            return true
        }

        /// A string, number, literal, or array of them, written compactly to `output`.
        private mutating func scalarOrList() -> Bool {
            skipSpace()
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                return false
            case UInt8(ascii: "["):
                index += 1
                output.append(UInt8(ascii: "["))
                if take(UInt8(ascii: "]")) {
                    output.append(UInt8(ascii: "]"))
                    return true
                }
                repeat {
                    guard scalarOrList() else { return false }
                    if take(UInt8(ascii: "]")) {
                        output.append(UInt8(ascii: "]"))
                        return true
                    }
                    output.append(UInt8(ascii: ","))
                } while take(UInt8(ascii: ","))
                return false
            case UInt8(ascii: "\""):
                guard let text = string() else { return false }
                output.append(contentsOf: bytes[text])
                return true
            default:
                // A number or true/false/null: up to the next delimiter.
                let start = index
                while index < bytes.count, !Self.isDelimiter(bytes[index]) { index += 1 }
                guard index > start else { return false }
                output.append(contentsOf: bytes[start..<index])
                return true
            }
        }

        /// Where a JSON string stands in `bytes`, quotes and escapes included.
        private mutating func string() -> Range<Int>? {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            let start = index
            index += 1
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\\"): index += 2
                case UInt8(ascii: "\""):
                    index += 1
                    return start..<index
                default: index += 1
                }
            }
            return nil
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        private mutating func skipSpace() {
            while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
        }

        private mutating func finished() -> [UInt8]? {
            skipSpace()
            return index == bytes.count ? output : nil
        }

        private static func isSpace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
        }

        private static func isDelimiter(_ byte: UInt8) -> Bool {
            isSpace(byte) || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}")
        }
    }
}
