extension JSONValue {
    /// Why and where a document is not JSON. `offset` counts bytes from the start of the input.
    package struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        package var offset: Int
        package var reason: String

        package init(offset: Int, reason: String) {
            self.offset = offset
            self.reason = reason
        }

        package var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    /// Bounds on what one document may make the parser do.
    package struct ParseLimits: Sendable {
        /// Most arrays and objects open at once. The parser recurses once per level, and nested
        /// values are also destroyed recursively, so this is the stack guard: keep it in the
        /// hundreds, not the hundreds of thousands.
        package var maxDepth = 64
        /// Longest string (key or value) in UTF-8 bytes after unescaping.
        package var maxStringBytes = Int.max

        package init(maxDepth: Int = 64, maxStringBytes: Int = .max) {
            self.maxDepth = maxDepth
            self.maxStringBytes = maxStringBytes
        }
    }

    /// Parses exactly one JSON value (RFC 8259), optionally surrounded by whitespace.
    ///
    /// Strict: no comments, trailing commas, byte-order mark, single quotes or non-finite numbers;
    /// strings must be valid UTF-8 and every `\u` surrogate escape must be paired; a duplicate
    /// object key is an error. Contiguous collections (`[UInt8]`, `ArraySlice`, native `String`
    /// UTF-8 views) are read in place; anything else is copied once.
    package static func parse(_ bytes: some Collection<UInt8>, limits: ParseLimits = .init()) throws(ParseError) -> JSONValue {
        let result = bytes.withContiguousStorageIfAvailable { buffer in
            parse(buffer: buffer, limits: limits)
        } ?? Array(bytes).withUnsafeBufferPointer { buffer in
            parse(buffer: buffer, limits: limits)
        }
        return try result.get()
    }

    /// Parses the UTF-8 of `text`; see `parse(_:limits:)` for the rules.
    package static func parse(_ text: String, limits: ParseLimits = .init()) throws(ParseError) -> JSONValue {
        try parse(text.utf8, limits: limits)
    }

    // The standard library's `with…` scopes rethrow untyped errors, so the typed error travels
    // out of them inside a `Result`.
    private static func parse(buffer: UnsafeBufferPointer<UInt8>, limits: ParseLimits) -> Result<JSONValue, ParseError> {
        var parser = JSONParser(input: buffer, limits: limits)
        do {
            return .success(try parser.parseDocument())
        } catch {
            return .failure(error)
        }
    }
}
