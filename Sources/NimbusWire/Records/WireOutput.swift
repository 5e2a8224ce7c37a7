/// Where the record and field writers (`RecordWire`, `FieldWire`) write: NimbusWire's two byte
/// writers, `JSONPageWriter` (the server's answers and stored forms) and `JSONWriter` (NimbusKit's
/// request bodies). The writers are generic over it only inside this module, where each use is
/// specialised; their entries take one of the two writers.
package protocol WireOutput: ~Copyable {
    /// Literal text (keys and punctuation), as it is.
    mutating func append(_ text: StaticString)
    /// Bytes that are already JSON, as they are.
    mutating func appendWire(_ bytes: UnsafeRawBufferPointer)
    /// A JSON string.
    mutating func write(_ string: String)
    /// An integer in decimal.
    mutating func write(_ integer: Int64)
}

extension JSONPageWriter: WireOutput {
    package mutating func appendWire(_ bytes: UnsafeRawBufferPointer) { append(raw: bytes) }
}

extension JSONWriter: WireOutput {
    package mutating func appendWire(_ bytes: UnsafeRawBufferPointer) { appendJSON(bytes) }
}
