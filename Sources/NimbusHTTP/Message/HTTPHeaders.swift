/// An ordered list of header fields with case-insensitive lookup (RFC 9110 §5.1).
package struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    package typealias Field = (name: String, value: String)

    private var names: [String] = []
    private var values: [String] = []

    package init() {}

    package init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name: name, value: value) }
    }

    package var count: Int { names.count }
    package var isEmpty: Bool { names.isEmpty }

    /// Makes room for `minimumCapacity` fields, so a parser appending them does not regrow storage.
    package mutating func reserveCapacity(_ minimumCapacity: Int) {
        names.reserveCapacity(minimumCapacity)
        values.reserveCapacity(minimumCapacity)
    }

    /// Appends a field, keeping any existing field of the same name.
    package mutating func add(name: String, value: String) {
        names.append(name)
        values.append(value)
    }

    /// Replaces every field of this name with one field.
    package mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    package mutating func remove(name: String) {
        var index = names.count - 1
        while index >= 0 {
            if names[index].equalsIgnoringASCIICase(name) {
                names.remove(at: index)
                values.remove(at: index)
            }
            index -= 1
        }
    }

    /// The first value of the named field.
    package subscript(name: String) -> String? {
        for index in names.indices where names[index].equalsIgnoringASCIICase(name) {
            return values[index]
        }
        return nil
    }

    /// Every value of the named field, in order.
    package func values(for name: String) -> [String] {
        names.indices.filter { names[$0].equalsIgnoringASCIICase(name) }.map { values[$0] }
    }

    /// The comma-separated elements of every value of a list-valued field, trimmed and lower-cased
    /// (RFC 9110 §5.6.1), e.g. the tokens of `Connection` or `Transfer-Encoding`.
    package func tokens(for name: String) -> [String] {
        values(for: name).flatMap { value in
            value.split(separator: ",").map { $0.trimmingASCIIWhitespace().lowercased() }
        }.filter { !$0.isEmpty }
    }

    package func contains(name: String) -> Bool { self[name] != nil }

    package func makeIterator() -> Iterator {
        Iterator(headers: self)
    }

    /// The fields in order.
    package struct Iterator: IteratorProtocol {
        fileprivate let headers: HTTPHeaders
        fileprivate var index = 0

        package mutating func next() -> Field? {
            guard index < headers.names.count else { return nil }
            defer { index += 1 }
            return (headers.names[index], headers.values[index])
        }
    }

    package static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.names == rhs.names && lhs.values == rhs.values
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(names)
        hasher.combine(values)
    }
}

extension StringProtocol {
    /// ASCII case-insensitive comparison, as header names and tokens need.
    package func equalsIgnoringASCIICase(_ other: some StringProtocol) -> Bool {
        let lhs = self.utf8, rhs = other.utf8
        guard lhs.count == rhs.count else { return false }
        // Native and small strings lend their bytes: compared in place, not through two iterators.
        let compared = lhs.withContiguousStorageIfAvailable { left in
            rhs.withContiguousStorageIfAvailable { right in Self.equalsIgnoringASCIICase(left, right) }
        }
        if let compared, let compared { return compared }
        for (a, b) in zip(lhs, rhs) where a != b && Self.lowercased(a) != Self.lowercased(b) { return false }
        return true
    }

    private static func equalsIgnoringASCIICase(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Bool {
        for index in 0..<left.count where left[index] != right[index] && lowercased(left[index]) != lowercased(right[index]) {
            return false
        }
        return true
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 65 && byte <= 90 ? byte | 0x20 : byte
    }

    /// The string without leading and trailing spaces and tabs (HTTP's OWS).
    package func trimmingASCIIWhitespace() -> Substring {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return slice
    }
}
