/// The elements of a one-dimensional array parameter in `array_send`'s binary format, written
/// as they come (each element's length and bytes) and joined without decoding: a write's record
/// names, types and wire forms go into their parameters as they are planned, never as `[String]`
/// first, and the requests a combined statement gathers are joined by appending their bytes.
package struct PGArrayElements: Sendable, Hashable {
    /// The element type's OID (`PGData.OID.text`, `.int8`).
    package let elementOID: UInt32
    package private(set) var count = 0
    private var payload: [UInt8] = []

    /// An empty array of `text` elements.
    package static var text: PGArrayElements { PGArrayElements(elementOID: PGData.OID.text) }
    /// An empty array of `int8` elements.
    package static var int64: PGArrayElements { PGArrayElements(elementOID: PGData.OID.int8) }

    private init(elementOID: UInt32) {
        self.elementOID = elementOID
    }

    /// Room for `count` more elements of about `bytes` bytes in all.
    package mutating func reserve(count: Int, bytes: Int) {
        payload.reserveCapacity(payload.count + count * 4 + bytes)
    }

    /// A text element given as its UTF-8 bytes (valid UTF-8, no NUL: PostgreSQL checks).
    package mutating func append(utf8 bytes: [UInt8]) {
        payload.appendBigEndian(Int32(bytes.count))
        payload.append(contentsOf: bytes)
        count += 1
    }

    /// A text element.
    package mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            payload.appendBigEndian(Int32(utf8.count))
            payload.append(contentsOf: utf8)
        }
        count += 1
    }

    /// An `int8` element.
    package mutating func append(_ value: Int64) {
        payload.appendBigEndian(Int32(8))
        payload.appendBigEndian(value)
        count += 1
    }

    /// Another array's elements after these (the same element type).
    package mutating func append(contentsOf other: PGArrayElements) {
        precondition(other.elementOID == elementOID, "arrays of one element type")
        payload.append(contentsOf: other.payload)
        count += other.count
    }

    /// The parameter: the array's header and these elements.
    package var pgData: PGData {
        var bytes = PGData.arrayHeader(elementOID: elementOID, count: count, payload: payload.count)
        bytes.append(contentsOf: payload)
        let arrayOID = elementOID == PGData.OID.text ? PGData.OID.textArray : PGData.OID.int8Array
        return .encoded(oid: arrayOID, bytes)
    }
}
