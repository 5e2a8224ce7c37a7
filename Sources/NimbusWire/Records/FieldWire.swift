/// How each field type's value looks on the wire (docs/api.md § Field types), written once for
/// the server (`FieldValue`, into a `JSONPageWriter`) and NimbusKit (`RecordValue`, into a
/// `JSONWriter`). Each writer takes primitives, so neither side builds a third value type:
///
///     STRING "text"            INT64 / TIMESTAMP 123 (TIMESTAMP: ms since 1970)    DOUBLE 1.5
///     BYTES and ENCRYPTED_BYTES "standard padded base64"
///     REFERENCE {"recordName":N,"action":"NONE"|"DELETE_SELF"[,"zoneID":{"zoneName":Z}]}
///     ASSETID {"fileChecksum":C,"size":S[,"receipt":R][,"downloadURL":U]}
///     X_LIST [v, v, ...] of X's values; a field {"value":V,"type":"T"}; {"value":null} removes it.
///
/// Lists are written by the caller (`listStart`, `listSeparator`, `listEnd`) around the element
/// writers, so a list of a side's values needs no copy. Key names: `WireKey`.
package enum FieldWire {
    /// After a field's name: `:{"value":`.
    @inlinable package static var entryStart: StaticString { #":{"value":"# }
    /// Between a field's value and its type's quoted name: `,"type":`.
    @inlinable package static var typeMember: StaticString { #","type":"# }
    /// After the type: `}`.
    @inlinable package static var entryEnd: StaticString { "}" }
    /// A field sent without a value, which removes it (records/modify): `:{"value":null}`.
    @inlinable package static var removal: StaticString { #":{"value":null}"# }
    @inlinable package static var listStart: StaticString { "[" }
    @inlinable package static var listSeparator: StaticString { "," }
    @inlinable package static var listEnd: StaticString { "]" }

    /// A TIMESTAMP: whole milliseconds since 1970-01-01 00:00 UTC.
    @inlinable package static func writeTimestamp(milliseconds: Int64, to writer: inout JSONPageWriter) { writer.write(milliseconds) }
    @inlinable package static func writeTimestamp(milliseconds: Int64, to writer: inout JSONWriter) { writer.write(milliseconds) }

    /// BYTES (and an ENCRYPTED_BYTES ciphertext): the bytes in standard padded base64, as a string.
    package static func writeBytes(_ bytes: UnsafeRawBufferPointer, to writer: inout JSONPageWriter) { base64(bytes, to: &writer) }
    package static func writeBytes(_ bytes: UnsafeRawBufferPointer, to writer: inout JSONWriter) { base64(bytes, to: &writer) }

    /// A REFERENCE; without `zoneName` the target is in the referencing record's zone.
    package static func writeReference(recordName: String, zoneName: String?, action: ReferenceAction,
                                       to writer: inout JSONPageWriter) {
        reference(recordName: recordName, zoneName: zoneName, action: action, to: &writer)
    }
    package static func writeReference(recordName: String, zoneName: String?, action: ReferenceAction,
                                       to writer: inout JSONWriter) {
        reference(recordName: recordName, zoneName: zoneName, action: action, to: &writer)
    }

    /// An ASSETID: the members given, in this order (the server always has checksum and size; a
    /// client's asset not yet uploaded may have neither).
    package static func writeAsset(fileChecksum: String?, size: Int64?, receipt: String?, downloadURL: String?,
                                   to writer: inout JSONPageWriter) {
        asset(fileChecksum: fileChecksum, size: size, receipt: receipt, downloadURL: downloadURL, to: &writer)
    }
    package static func writeAsset(fileChecksum: String?, size: Int64?, receipt: String?, downloadURL: String?,
                                   to writer: inout JSONWriter) {
        asset(fileChecksum: fileChecksum, size: size, receipt: receipt, downloadURL: downloadURL, to: &writer)
    }

    // The layouts, once; specialised in this module for each writer above.

    private static func reference<Output: WireOutput & ~Copyable>(recordName: String, zoneName: String?, action: ReferenceAction,
                                                                  to writer: inout Output) {
        writer.append(#"{"recordName":"#)
        writer.write(recordName)
        writer.append(#","action":"#)
        writer.append(action.quotedName)
        if let zoneName {
            writer.append(#","zoneID":{"zoneName":"#)
            writer.write(zoneName)
            writer.append("}")
        }
        writer.append("}")
    }

    private static func asset<Output: WireOutput & ~Copyable>(fileChecksum: String?, size: Int64?, receipt: String?,
                                                              downloadURL: String?, to writer: inout Output) {
        writer.append("{")
        var first = true
        if let fileChecksum {
            writer.append(#""fileChecksum":"#)
            writer.write(fileChecksum)
            first = false
        }
        if let size {
            if !first { writer.append(",") }
            writer.append(#""size":"#)
            writer.write(size)
            first = false
        }
        if let receipt {
            if !first { writer.append(",") }
            writer.append(#""receipt":"#)
            writer.write(receipt)
            first = false
        }
        if let downloadURL {
            if !first { writer.append(",") }
            writer.append(#""downloadURL":"#)
            writer.write(downloadURL)
        }
        writer.append("}")
    }

    private static func base64<Output: WireOutput & ~Copyable>(_ bytes: UnsafeRawBufferPointer, to writer: inout Output) {
        let count = (bytes.count + 2) / 3 * 4
        let text = [UInt8](unsafeUninitializedCapacity: count + 2) { out, initialized in
            out[0] = UInt8(ascii: "\"")
            var target = 1, index = 0
            func character(_ value: UInt32) -> UInt8 { alphabet[Int(value & 0x3F)] }
            while index + 3 <= bytes.count {
                let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                out[target] = character(group >> 18)
                out[target + 1] = character(group >> 12)
                out[target + 2] = character(group >> 6)
                out[target + 3] = character(group)
                target += 4
                index += 3
            }
            let rest = bytes.count - index
            if rest > 0 {
                let group = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
                out[target] = character(group >> 18)
                out[target + 1] = character(group >> 12)
                out[target + 2] = rest == 2 ? character(group >> 6) : UInt8(ascii: "=")
                out[target + 3] = UInt8(ascii: "=")
                target += 4
            }
            out[target] = UInt8(ascii: "\"")
            initialized = target + 1
        }
        text.withUnsafeBytes { writer.appendWire($0) }
    }

    /// RFC 4648 §4's alphabet.
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
}
