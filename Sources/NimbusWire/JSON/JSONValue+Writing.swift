extension JSONValue {
    /// Compact JSON (no whitespace) as UTF-8. With `sortedKeys`, object members at every level are
    /// written in UTF-8 byte order of their keys, which makes the output canonical for hashing and
    /// comparisons; otherwise in their stored order.
    ///
    /// Every value written re-parses to an equal value; the one exception is a non-finite double,
    /// which JSON cannot express and is written as `null`.
    package func serialized(sortedKeys: Bool = false) -> [UInt8] {
        var bytes: [UInt8] = []
        write(to: &bytes, sortedKeys: sortedKeys)
        return bytes
    }

    /// Appends the serialized value to `bytes` (for building a larger body without a copy).
    package func write(to bytes: inout [UInt8], sortedKeys: Bool = false) {
        var writer = JSONWriter(bytes: bytes, sortedKeys: sortedKeys)
        bytes = []                      // keep the writer's buffer uniquely referenced
        writer.write(self)
        bytes = writer.bytes
    }

    package var serializedString: String {
        String(decoding: serialized(), as: UTF8.self)
    }
}

extension JSONValue: CustomStringConvertible {
    package var description: String { serializedString }
}

extension JSONObject: CustomStringConvertible {
    package var description: String { JSONValue.object(self).serializedString }
}
