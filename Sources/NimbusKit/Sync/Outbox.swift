import Foundation

/// The engine's pending changes in enqueue order, one entry per record, with a position index
/// (finding a record's entry costs the same at 10 or 10,000 entries) and the set of records
/// changed since the journal last saved them, so that a save writes only those.
struct Outbox: Sendable, Equatable, Codable, RandomAccessCollection {
    private(set) var entries: [OutboxEntry] = []
    private var positions: [RecordID: Int] = [:]
    /// Records whose entry was added, changed or removed since `markSaved()`.
    private(set) var dirty: Set<RecordID> = []

    init() {}

    init(_ entries: [OutboxEntry]) {
        self.entries = entries.sorted { $0.sequence < $1.sequence }
        reindex()
    }

    var startIndex: Int { 0 }
    var endIndex: Int { entries.count }

    /// Setting an entry marks its record for the next save.
    subscript(position: Int) -> OutboxEntry {
        get { entries[position] }
        set {
            let old = entries[position].recordID
            entries[position] = newValue
            dirty.insert(old)
            if old != newValue.recordID {
                positions[old] = nil
                positions[newValue.recordID] = position
                dirty.insert(newValue.recordID)
            }
        }
    }

    /// Where a record's entry is.
    func index(of id: RecordID) -> Int? { positions[id] }

    func entry(for id: RecordID) -> OutboxEntry? { positions[id].map { entries[$0] } }

    /// Adds an entry at the end (its sequence is the newest); a record has one entry, so an
    /// existing one is replaced in place.
    mutating func append(_ entry: OutboxEntry) {
        if let index = positions[entry.recordID] {
            self[index] = entry
            return
        }
        positions[entry.recordID] = entries.count
        entries.append(entry)
        dirty.insert(entry.recordID)
    }

    /// Puts an entry back where its sequence belongs (undoing a change the journal refused).
    mutating func restore(_ entry: OutboxEntry) {
        if let index = positions[entry.recordID], entries[index].sequence == entry.sequence {
            self[index] = entry
            return
        }
        remove(entry.recordID)
        let index = entries.firstIndex { $0.sequence > entry.sequence } ?? entries.count
        entries.insert(entry, at: index)
        dirty.insert(entry.recordID)
        reindex()
    }

    mutating func removeAll(where shouldRemove: (OutboxEntry) throws -> Bool) rethrows {
        var kept: [OutboxEntry] = []
        kept.reserveCapacity(entries.count)
        for entry in entries {
            if try shouldRemove(entry) { dirty.insert(entry.recordID) } else { kept.append(entry) }
        }
        guard kept.count != entries.count else { return }
        entries = kept
        reindex()
    }

    mutating func remove(_ id: RecordID) {
        guard let index = positions[id] else { return }
        entries.remove(at: index)
        dirty.insert(id)
        reindex()
    }

    /// The journal wrote every dirty record.
    mutating func markSaved() { dirty = [] }

    private mutating func reindex() {
        positions = Dictionary(entries.enumerated().map { ($1.recordID, $0) }, uniquingKeysWith: { a, _ in a })
    }

    // The file format (old state files and journal snapshots alike) is the array of entries.
    init(from decoder: any Decoder) throws {
        self.init(try [OutboxEntry](from: decoder))
    }

    func encode(to encoder: any Encoder) throws { try entries.encode(to: encoder) }

    static func == (lhs: Outbox, rhs: Outbox) -> Bool { lhs.entries == rhs.entries }
}

extension Outbox: ExpressibleByArrayLiteral {
    init(arrayLiteral elements: OutboxEntry...) { self.init(elements) }
}
