/// The members of a JSON object in document order, with unique keys (the parser rejects a
/// duplicate key). Lookups are linear for small objects; past `indexThreshold` members a
/// key → position table is kept alongside so large objects stay O(1) per lookup.
package struct JSONObject: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    package typealias Element = (key: String, value: JSONValue)

    struct Member: Sendable, Hashable {
        var key: String
        var value: JSONValue
    }

    /// Above this many members a position table is kept (below it, comparing a few short keys
    /// beats hashing one).
    static let indexThreshold = 12

    private(set) var members: [Member]
    /// Key → index into `members`; `nil` while the object is small. Not part of equality.
    private var positions: [String: Int]?

    package init() {
        members = []
        positions = nil
    }

    /// Members in order; a key given twice keeps its first position and its last value.
    package init(_ members: [(String, JSONValue)]) {
        self.init()
        self.members.reserveCapacity(members.count)
        for (key, value) in members {
            self[key] = value
        }
    }

    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(literal: elements)
    }

    init(literal elements: [(String, JSONValue)]) {
        self.init(elements)
        precondition(members.count == elements.count, "duplicate key in a JSONObject literal")
    }

    /// For the parser, which has already established that the keys are unique (and built the
    /// position table when the object is large).
    init(uniqueMembers: [Member], positions: [String: Int]?) {
        members = uniqueMembers
        self.positions = positions
    }

    package var count: Int { members.count }
    package var isEmpty: Bool { members.isEmpty }
    package var keys: [String] { members.map(\.key) }
    package var values: [JSONValue] { members.map(\.value) }

    /// The value for `key`. Setting a new key appends it; setting an existing key replaces its
    /// value in place; setting `nil` removes the member.
    package subscript(key: String) -> JSONValue? {
        get {
            guard let index = index(of: key) else { return nil }
            return members[index].value
        }
        set {
            if let index = index(of: key) {
                if let newValue {
                    members[index].value = newValue
                } else {
                    members.remove(at: index)
                    rebuildPositions()
                }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
                if positions != nil {
                    positions![key] = members.count - 1
                } else if members.count > Self.indexThreshold {
                    rebuildPositions()
                }
            }
        }
    }

    private func index(of key: String) -> Int? {
        if let positions { return positions[key] }
        return members.firstIndex { $0.key == key }
    }

    private mutating func rebuildPositions() {
        guard members.count > Self.indexThreshold else {
            positions = nil
            return
        }
        var table = [String: Int](minimumCapacity: members.count)
        for (index, member) in members.enumerated() {
            table[member.key] = index
        }
        positions = table
    }

    package static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members == rhs.members
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(members)
    }

    package struct Iterator: IteratorProtocol {
        fileprivate var base: IndexingIterator<[Member]>

        package mutating func next() -> (key: String, value: JSONValue)? {
            guard let member = base.next() else { return nil }
            return (member.key, member.value)
        }
    }

    package func makeIterator() -> Iterator {
        Iterator(base: members.makeIterator())
    }

    package var underestimatedCount: Int { members.count }
}
