import CLibPQ
import Foundation

/// Every row of a result, for reading the whole of it in one pass (`PGPool.read`); valid only
/// inside the closure it is given to.
package struct PGRows {
    fileprivate let result: OpaquePointer
    private let columnCount: Int
    package let count: Int

    init(result: OpaquePointer) {
        self.result = result
        columnCount = Int(PQnfields(result))
        count = Int(PQntuples(result))
    }

    package subscript(index: Int) -> PGRow { PGRow(result: result, row: Int32(index), columnCount: columnCount) }
}

/// One row of a result, valid only inside the `decode` closure that receives it: it reads the
/// libpq result directly and must not escape. Columns arrive in binary format.
package struct PGRow {
    fileprivate let result: OpaquePointer
    fileprivate let row: Int32
    /// The result's number of columns, asked of libpq once per result rather than per column read.
    package let columnCount: Int

    init(result: OpaquePointer, row: Int32, columnCount: Int) {
        self.result = result
        self.row = row
        self.columnCount = columnCount
    }

    /// The index of a named column.
    package func column(_ name: String) throws -> Int {
        let index = PQfnumber(result, name)
        guard index >= 0 else { throw PGError(.decoding, "no column named \(name)") }
        return Int(index)
    }

    package func isNull(_ column: Int) -> Bool {
        PQgetisnull(result, row, Int32(column)) == 1
    }

    /// The column's type OID.
    package func type(_ column: Int) -> UInt32 {
        PQftype(result, Int32(column))
    }

    // MARK: Typed accessors (throw on NULL or a type that does not convert)

    package func int(_ column: Int) throws -> Int { Int(try int64(column)) }

    package func int64(_ column: Int) throws -> Int64 {
        let bytes = try raw(column)
        switch type(column) {
        case PGData.OID.int8: return Int64(bigEndian: try load(bytes, column))
        case PGData.OID.int4: return Int64(Int32(bigEndian: try load(bytes, column)))
        case PGData.OID.int2: return Int64(Int16(bigEndian: try load(bytes, column)))
        case PGData.OID.oid: return Int64(UInt32(bigEndian: try load(bytes, column)))
        default: throw mismatch(column, "an integer")
        }
    }

    package func double(_ column: Int) throws -> Double {
        let bytes = try raw(column)
        switch type(column) {
        case PGData.OID.float8: return Double(bitPattern: UInt64(bigEndian: try load(bytes, column)))
        case PGData.OID.float4: return Double(Float(bitPattern: UInt32(bigEndian: try load(bytes, column))))
        case PGData.OID.int8, PGData.OID.int4, PGData.OID.int2: return Double(try int64(column))
        default: throw mismatch(column, "a floating-point number")
        }
    }

    package func bool(_ column: Int) throws -> Bool {
        guard type(column) == PGData.OID.bool else { throw mismatch(column, "a boolean") }
        let bytes = try raw(column)
        guard bytes.count == 1 else { throw mismatch(column, "a boolean") }
        return bytes[0] != 0
    }

    /// Text columns (and json/jsonb documents as their text).
    package func string(_ column: Int) throws -> String {
        let bytes = try raw(column)
        switch type(column) {
        case PGData.OID.text, PGData.OID.varchar, PGData.OID.name, PGData.OID.bpchar, PGData.OID.unknown, PGData.OID.json:
            return String(decoding: bytes, as: UTF8.self)
        case PGData.OID.jsonb:
            return try jsonText(column, bytes)
        default:
            throw mismatch(column, "text")
        }
    }

    /// A text, json or jsonb column's UTF-8 text where libpq holds it (jsonb without its version
    /// byte), not copied: valid only until the closure that was handed this row returns.
    package func unsafeText(_ column: Int) throws -> UnsafeRawBufferPointer {
        let bytes = try raw(column)
        switch type(column) {
        case PGData.OID.text, PGData.OID.varchar, PGData.OID.name, PGData.OID.bpchar, PGData.OID.unknown, PGData.OID.json:
            return bytes
        case PGData.OID.jsonb:
            guard let version = bytes.first, version == 1 else { throw mismatch(column, "jsonb version 1") }
            return UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
        default:
            throw mismatch(column, "text")
        }
    }

    package func bytes(_ column: Int) throws -> [UInt8] {
        guard type(column) == PGData.OID.bytea else { throw mismatch(column, "bytea") }
        return Array(try raw(column))
    }

    /// A json or jsonb column as its UTF-8 text.
    package func jsonb(_ column: Int) throws -> String {
        let bytes = try raw(column)
        switch type(column) {
        case PGData.OID.jsonb: return try jsonText(column, bytes)
        case PGData.OID.json, PGData.OID.text: return String(decoding: bytes, as: UTF8.self)
        default: throw mismatch(column, "jsonb")
        }
    }

    package func date(_ column: Int) throws -> Date {
        guard type(column) == PGData.OID.timestamptz || type(column) == PGData.OID.timestamp else {
            throw mismatch(column, "a timestamp")
        }
        let micros = Int64(bigEndian: try load(try raw(column), column))
        let (unix, overflow) = micros.addingReportingOverflow(PGData.postgresEpochOffsetMicroseconds)
        guard !overflow else { throw mismatch(column, "a finite timestamp") }
        return Date(timeIntervalSince1970: Double(unix) / 1_000_000)
    }

    /// A timestamp as milliseconds since the Unix epoch (exact, no floating point).
    package func milliseconds(_ column: Int) throws -> Int64 {
        guard type(column) == PGData.OID.timestamptz || type(column) == PGData.OID.timestamp else {
            throw mismatch(column, "a timestamp")
        }
        let micros = Int64(bigEndian: try load(try raw(column), column))
        let (unix, overflow) = micros.addingReportingOverflow(PGData.postgresEpochOffsetMicroseconds)
        guard !overflow else { throw mismatch(column, "a finite timestamp") }
        return unix / 1000
    }

    package func uuid(_ column: Int) throws -> UUID {
        guard type(column) == PGData.OID.uuid else { throw mismatch(column, "a uuid") }
        let bytes = try raw(column)
        guard bytes.count == 16 else { throw mismatch(column, "a uuid") }
        let b = Array(bytes)
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    // MARK: Optional accessors (nil for NULL)

    package func optionalInt64(_ column: Int) throws -> Int64? { isNull(column) ? nil : try int64(column) }
    package func optionalString(_ column: Int) throws -> String? { isNull(column) ? nil : try string(column) }
    package func optionalDate(_ column: Int) throws -> Date? { isNull(column) ? nil : try date(column) }
    package func optionalMilliseconds(_ column: Int) throws -> Int64? { isNull(column) ? nil : try milliseconds(column) }
    package func optionalBytes(_ column: Int) throws -> [UInt8]? { isNull(column) ? nil : try bytes(column) }

    // MARK: Internals

    private func raw(_ column: Int) throws -> UnsafeRawBufferPointer {
        guard column >= 0, column < columnCount else { throw PGError(.decoding, "column \(column) is out of range") }
        // NULL has length 0: a value with bytes needs no second call to say it is not NULL.
        let length = Int(PQgetlength(result, row, Int32(column)))
        guard length > 0 || !isNull(column) else {
            throw PGError(.decoding, "column \(String(cString: PQfname(result, Int32(column)))) is NULL")
        }
        guard let pointer = PQgetvalue(result, row, Int32(column)) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: pointer, count: length)
    }

    private func load<T: FixedWidthInteger>(_ bytes: UnsafeRawBufferPointer, _ column: Int) throws -> T {
        guard bytes.count == MemoryLayout<T>.size else { throw mismatch(column, "\(MemoryLayout<T>.size)-byte value") }
        return bytes.loadUnaligned(as: T.self)
    }

    private func jsonText(_ column: Int, _ bytes: UnsafeRawBufferPointer) throws -> String {
        // jsonb's binary form is a version byte (1) followed by the text.
        guard let version = bytes.first, version == 1 else { throw mismatch(column, "jsonb version 1") }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes.dropFirst()), as: UTF8.self)
    }

    private func mismatch(_ column: Int, _ expected: String) -> PGError {
        let name = column < columnCount ? String(cString: PQfname(result, Int32(column))) : "#\(column)"
        return PGError(.decoding, "column \(name) (type \(type(column))) is not \(expected)")
    }
}
