/// The mask penalty of §7.8.3 (table 11): runs, 2×2 blocks, finder-like patterns, dark balance.
enum QRPenalty {
    static func score(_ modules: [[Bool]]) -> Int {
        let size = modules.count
        let columns = (0..<size).map { c in modules.map { $0[c] } }
        var total = 0
        for line in modules + columns { total += runs(line) + finderLike(line) }
        for r in 0..<(size - 1) {
            for c in 0..<(size - 1) {
                let colour = modules[r][c]
                if modules[r][c + 1] == colour && modules[r + 1][c] == colour && modules[r + 1][c + 1] == colour { total += 3 }
            }
        }
        let dark = modules.reduce(0) { $0 + $1.filter { $0 }.count }
        let cells = size * size
        let k = (abs(dark * 20 - cells * 10) + cells - 1) / cells - 1
        return total + max(0, k) * 10
    }

    /// N1: 3 + (length − 5) for each run of five or more modules of one colour.
    private static func runs(_ line: [Bool]) -> Int {
        var penalty = 0
        var length = 1
        for i in 1...line.count {
            if i < line.count && line[i] == line[i - 1] {
                length += 1
            } else {
                if length >= 5 { penalty += 3 + (length - 5) }
                length = 1
            }
        }
        return penalty
    }

    /// N3: 40 for each 1:1:3:1:1 dark pattern with four light modules on one side (outside the
    /// symbol counts as light).
    private static func finderLike(_ line: [Bool]) -> Int {
        let pattern = [true, false, true, true, true, false, true]
        var penalty = 0
        func light(_ i: Int) -> Bool { i < 0 || i >= line.count || !line[i] }
        for start in 0...(line.count - 7) where (0..<7).allSatisfy({ line[start + $0] == pattern[$0] }) {
            if (1...4).allSatisfy({ light(start - $0) }) || (1...4).allSatisfy({ light(start + 6 + $0) }) { penalty += 40 }
        }
        return penalty
    }
}
