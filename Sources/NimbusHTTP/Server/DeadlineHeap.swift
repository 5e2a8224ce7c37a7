/// Deadlines in monotonic nanoseconds, earliest first: a binary min-heap (equal deadlines in the
/// order they were pushed). Pure: the event loop pushes its timers here and sleeps in `epoll_wait`
/// until `earliest`, instead of scanning every connection now and then.
///
/// Entries are never updated in place: a timer that moves or is cancelled leaves its old entry
/// behind (lazy deletion), and whoever pops an entry checks it against its owner (the loop
/// compares a generation and the deadline the owner still wants). `compact(keeping:)` drops the
/// stale entries once they outnumber the live ones.
struct DeadlineHeap<ID> {
    struct Entry {
        var deadline: UInt64
        var id: ID
        /// Push order: breaks ties between equal deadlines.
        fileprivate var sequence: UInt64
    }

    private(set) var entries: [Entry] = []
    private var pushed: UInt64 = 0

    init() {}

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    /// The earliest deadline, nil when empty (stale entries included).
    var earliest: UInt64? { entries.first?.deadline }

    mutating func push(_ id: ID, at deadline: UInt64) {
        entries.append(Entry(deadline: deadline, id: id, sequence: pushed))
        pushed &+= 1
        siftUp(entries.count - 1)
    }

    /// Removes and returns the earliest entry if its deadline is at or before `now`.
    mutating func popDue(now: UInt64) -> Entry? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            siftDown(0)
        }
        return first
    }

    /// Keeps only the entries `isLive` accepts, in heap order again (O(n)).
    mutating func compact(keeping isLive: (Entry) -> Bool) {
        entries.removeAll { !isLive($0) }
        var index = entries.count / 2
        while index > 0 {
            index -= 1
            siftDown(index)
        }
    }

    // MARK: - Heap order

    private static func before(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(entries[child], entries[parent]) else { return }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let count = entries.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { return }
            let right = left + 1
            let child = right < count && Self.before(entries[right], entries[left]) ? right : left
            guard Self.before(entries[child], entries[parent]) else { return }
            entries.swapAt(child, parent)
            parent = child
        }
    }
}

/// Whose deadline an entry of the loop's heap is: a connection (its loop-wide generation, so a
/// descriptor number reused by a later connection is not mistaken for it) or a lingering socket
/// (generation 0).
struct LoopTimerID: Equatable {
    var descriptor: Int32
    var generation: UInt64

    static func lingering(_ descriptor: Int32) -> LoopTimerID {
        LoopTimerID(descriptor: descriptor, generation: 0)
    }
}
