import Foundation

/// One statement parameter, sent in PostgreSQL's binary format with an explicit type OID.
package enum PGData: Sendable, Hashable {
    case null
    case text(String)
    case int32(Int32)
    case int64(Int64)
    case double(Double)
    case bool(Bool)
    case bytea([UInt8])
    /// A JSON document as text; sent as `jsonb`.
    case jsonb(String)
    case timestamptz(Date)
    case uuid(UUID)
    case textArray([String])
    case int64Array([Int64])
    case byteaArray([[UInt8]])
    /// A value already in binary form, with its type's OID (`PGArrayElements`).
    case encoded(oid: UInt32, [UInt8])

    /// Type OIDs from `pg_type` (stable across PostgreSQL versions).
    package enum OID {
        package static let bool: UInt32 = 16
        package static let bytea: UInt32 = 17
        package static let name: UInt32 = 19
        package static let int8: UInt32 = 20
        package static let int2: UInt32 = 21
        package static let int4: UInt32 = 23
        package static let text: UInt32 = 25
        package static let oid: UInt32 = 26
        package static let json: UInt32 = 114
        package static let float4: UInt32 = 700
        package static let float8: UInt32 = 701
        package static let unknown: UInt32 = 705
        package static let bpchar: UInt32 = 1042
        package static let varchar: UInt32 = 1043
        package static let timestamp: UInt32 = 1114
        package static let timestamptz: UInt32 = 1184
        package static let uuid: UInt32 = 2950
        package static let jsonb: UInt32 = 3802
        package static let textArray: UInt32 = 1009
        package static let int8Array: UInt32 = 1016
        package static let byteaArray: UInt32 = 1001
    }

    /// Microseconds between the Unix epoch and PostgreSQL's epoch (2000-01-01 UTC).
    static let postgresEpochOffsetMicroseconds: Int64 = 946_684_800_000_000

    /// The parameter's type OID and binary encoding (nil bytes for SQL NULL).
    var binary: (oid: UInt32, bytes: [UInt8]?) {
        switch self {
        case .null: return (0, nil)
        case .text(let value): return (OID.text, Array(value.utf8))
        case .int32(let value): return (OID.int4, value.bigEndianBytes)
        case .int64(let value): return (OID.int8, value.bigEndianBytes)
        case .double(let value): return (OID.float8, value.bitPattern.bigEndianBytes)
        case .bool(let value): return (OID.bool, [value ? 1 : 0])
        case .bytea(let value): return (OID.bytea, value)
        case .encoded(let oid, let bytes): return (oid, bytes)
        case .jsonb(let value): return (OID.jsonb, [1] + Array(value.utf8))  // jsonb binary version 1
        case .timestamptz(let date):
            let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) - Self.postgresEpochOffsetMicroseconds
            return (OID.timestamptz, micros.bigEndianBytes)
        case .uuid(let value):
            return (OID.uuid, withUnsafeBytes(of: value.uuid) { Array($0) })
        case .textArray(let values):
            var bytes = Self.arrayHeader(elementOID: OID.text, count: values.count, payload: values.reduce(0) { $0 + 4 + $1.utf8.count })
            for value in values {
                bytes.appendBigEndian(Int32(value.utf8.count))
                bytes.append(contentsOf: value.utf8)
            }
            return (OID.textArray, bytes)
        case .int64Array(let values):
            var bytes = Self.arrayHeader(elementOID: OID.int8, count: values.count, payload: values.count * 12)
            for value in values {
                bytes.appendBigEndian(Int32(8))
                bytes.appendBigEndian(value)
            }
            return (OID.int8Array, bytes)
        case .byteaArray(let values):
            var bytes = Self.arrayHeader(elementOID: OID.bytea, count: values.count, payload: values.reduce(0) { $0 + 4 + $1.count })
            for value in values {
                bytes.appendBigEndian(Int32(value.count))
                bytes.append(contentsOf: value)
            }
            return (OID.byteaArray, bytes)
        }
    }

    /// The header of a one-dimensional array in the binary format of `array_send`, with room for
    /// `payload` more bytes: each element's length (Int32) and bytes, written straight after it
    /// (no array per element: a 100-record statement has ~1,000 of them).
    static func arrayHeader(elementOID: UInt32, count: Int, payload: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20 + payload)
        bytes.appendBigEndian(Int32(1))             // dimensions
        bytes.appendBigEndian(Int32(0))             // no NULL elements
        bytes.appendBigEndian(elementOID)
        bytes.appendBigEndian(Int32(count))
        bytes.appendBigEndian(Int32(1))             // lower bound
        return bytes
    }
}

extension [UInt8] {
    mutating func appendBigEndian(_ value: some FixedWidthInteger) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}

extension FixedWidthInteger {
    var bigEndianBytes: [UInt8] {
        withUnsafeBytes(of: self.bigEndian) { Array($0) }
    }
}

/// A Swift value that can be a statement parameter.
package protocol PGEncodable: Sendable {
    var pgData: PGData { get }
}

extension String: PGEncodable { package var pgData: PGData { .text(self) } }
extension Substring: PGEncodable { package var pgData: PGData { .text(String(self)) } }
extension Int: PGEncodable { package var pgData: PGData { .int64(Int64(self)) } }
extension Int64: PGEncodable { package var pgData: PGData { .int64(self) } }
extension Int32: PGEncodable { package var pgData: PGData { .int32(self) } }
extension Double: PGEncodable { package var pgData: PGData { .double(self) } }
extension Bool: PGEncodable { package var pgData: PGData { .bool(self) } }
extension Array: PGEncodable where Element == UInt8 { package var pgData: PGData { .bytea(self) } }
extension Date: PGEncodable { package var pgData: PGData { .timestamptz(self) } }
extension UUID: PGEncodable { package var pgData: PGData { .uuid(self) } }
extension PGData: PGEncodable { package var pgData: PGData { self } }

extension Optional: PGEncodable where Wrapped: PGEncodable {
    package var pgData: PGData { self?.pgData ?? .null }
}
