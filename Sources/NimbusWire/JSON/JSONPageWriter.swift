#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// JSON written into one growable buffer of its own, for answers of many records written from
/// database rows (a change feed page): each piece is a bounds check and a `memcpy`, where an
/// `Array` append of a short piece costs more than copying its bytes. Writes the same bytes as
/// `JSONWriter` (JSONPageWriterTests); `finish()` hands them over as an array.
package struct JSONPageWriter: ~Copyable {
    private var base: UnsafeMutableRawPointer
    private var capacity: Int
    /// Bytes written so far.
    package private(set) var count = 0

    /// A writer with room for `capacity` bytes before it first grows.
    package init(capacity: Int = 4096) {
        self.capacity = max(capacity, 64)
        base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 1)
    }

    deinit { base.deallocate() }

    /// The bytes written, as an array (one copy); the writer is used up.
    package consuming func finish() -> [UInt8] {
        let bytes = [UInt8](UnsafeRawBufferPointer(start: base, count: count))
        return bytes
    }

    /// Calls `body` with the bytes written so far (valid only inside the call).
    package func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Makes room for `extra` more bytes: at least doubles, so appends are amortised O(1).
    private mutating func reserve(_ extra: Int) {
        guard count + extra > capacity else { return }
        let newCapacity = max(capacity * 2, count + extra)
        let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 1)
        newBase.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    /// A single byte, e.g. `,` between records.
    package mutating func append(byte: UInt8) {
        reserve(1)
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    /// Literal text (keys and punctuation), as it is.
    package mutating func append(_ text: StaticString) {
        append(raw: UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Bytes that are already JSON (a stored wire form), as they are.
    package mutating func append(raw bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        (base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    /// A JSON string of valid UTF-8 bytes: quotes, backslashes and control characters escaped
    /// (RFC 8259 §7), everything else as it is.
    package mutating func write(utf8 bytes: UnsafeRawBufferPointer) {
        append(byte: UInt8(ascii: "\""))
        var runStart = 0, index = JSONEscape.plainRun(bytes, from: 0, asciiOnly: false)
        while index < bytes.count {
            let byte = bytes[index]
            if JSONEscape.isNeeded(byte) {
                append(raw: UnsafeRawBufferPointer(rebasing: bytes[runStart..<index]))
                appendEscape(for: byte)
                runStart = index + 1
            }
            index += 1
        }
        append(raw: UnsafeRawBufferPointer(rebasing: bytes[runStart...]))
        append(byte: UInt8(ascii: "\""))
    }

    /// A JSON string.
    package mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { write(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// An integer in decimal.
    package mutating func write(_ integer: Int64) {
        IntegerDigits.withText(integer, radix: 10) { append(raw: $0) }
    }

    /// A double as `DoubleText` spells it (`null` when not finite), as `JSONWriter` writes it.
    package mutating func write(_ double: Double) {
        DoubleText.withText(double) { append(raw: $0) }
    }

    /// An integer's digits in base 36 (lower-case letters), as `String(_:radix: 36)` spells
    /// them, without quotes (change tags).
    package mutating func writeBase36(_ integer: Int64) {
        IntegerDigits.withText(integer, radix: 36) { append(raw: $0) }
    }

    private mutating func appendEscape(for byte: UInt8) {
        JSONEscape.write(byte) { append(raw: $0) }
    }
}
