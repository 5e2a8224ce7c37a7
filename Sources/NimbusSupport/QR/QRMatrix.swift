/// The module grid under construction: function patterns first (remembered so that data and
/// masks skip them), then codewords, then a mask and the format bits.
struct QRMatrix {
    let version: QRVersion
    var modules: [[Bool]]
    private var isFunction: [[Bool]]
    var size: Int { version.size }

    init(version: QRVersion) {
        self.version = version
        let size = version.size
        modules = Array(repeating: Array(repeating: false, count: size), count: size)
        isFunction = modules
        for i in 0..<size {
            set(row: 6, column: i, i % 2 == 0)  // timing patterns (§6.3.5)
            set(row: i, column: 6, i % 2 == 0)
        }
        for (row, column) in [(3, 3), (3, size - 4), (size - 4, 3)] { drawFinder(row: row, column: column) }
        let centres = version.alignmentCentres
        for (i, row) in centres.enumerated() {
            for (j, column) in centres.enumerated() {
                let overlapsFinder = (i == 0 && j == 0) || (i == 0 && j == centres.count - 1) || (i == centres.count - 1 && j == 0)
                if !overlapsFinder { drawAlignment(row: row, column: column) }
            }
        }
        drawFormat(mask: 0)  // reserves the format areas; rewritten once the mask is chosen
        drawVersion()
    }

    private mutating func set(row: Int, column: Int, _ dark: Bool) {
        modules[row][column] = dark
        isFunction[row][column] = true
    }

    /// A finder pattern with its separator (§6.3.3): rings by distance from the centre.
    private mutating func drawFinder(row: Int, column: Int) {
        for dy in -4...4 {
            for dx in -4...4 {
                let r = row + dy, c = column + dx
                guard r >= 0, r < size, c >= 0, c < size else { continue }
                let distance = max(abs(dx), abs(dy))
                set(row: r, column: c, distance != 2 && distance != 4)
            }
        }
    }

    private mutating func drawAlignment(row: Int, column: Int) {
        for dy in -2...2 {
            for dx in -2...2 { set(row: row + dy, column: column + dx, max(abs(dx), abs(dy)) != 1) }
        }
    }

    /// Both copies of the format information and the dark module (§7.9.1, figure 25).
    mutating func drawFormat(mask: Int) {
        let bits = QRCode.formatBits(mask: mask)
        func bit(_ i: Int) -> Bool { (bits >> i) & 1 == 1 }
        for i in 0...5 { set(row: i, column: 8, bit(i)) }
        set(row: 7, column: 8, bit(6))
        set(row: 8, column: 8, bit(7))
        set(row: 8, column: 7, bit(8))
        for i in 9..<15 { set(row: 8, column: 14 - i, bit(i)) }
        for i in 0..<8 { set(row: 8, column: size - 1 - i, bit(i)) }
        for i in 8..<15 { set(row: size - 15 + i, column: 8, bit(i)) }
        set(row: size - 8, column: 8, true)
    }

    /// Both copies of the version information, versions 7 and up (§7.10).
    private mutating func drawVersion() {
        guard version.number >= 7 else { return }
        let bits = QRCode.versionBits(version.number)
        for i in 0..<18 {
            let dark = (bits >> i) & 1 == 1
            let a = size - 11 + i % 3, b = i / 3
            set(row: b, column: a, dark)
            set(row: a, column: b, dark)
        }
    }

    /// Codewords in the two-column zigzag from the bottom right, skipping the vertical timing
    /// column and function modules (§7.7.3); remainder bits stay light.
    mutating func place(_ codewords: [UInt8]) {
        var index = 0
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            for vertical in 0..<size {
                for j in 0..<2 {
                    let column = right - j
                    let upward = (right + 1) & 2 == 0
                    let row = upward ? size - 1 - vertical : vertical
                    guard !isFunction[row][column], index < codewords.count * 8 else { continue }
                    modules[row][column] = (codewords[index >> 3] >> (7 - (index & 7))) & 1 == 1
                    index += 1
                }
            }
            right -= 2
        }
    }

    /// Flips the data modules selected by mask pattern `mask` (§7.8.2, table 10).
    mutating func applyMask(_ mask: Int) {
        for row in 0..<size {
            for column in 0..<size where !isFunction[row][column] {
                let (x, y) = (column, row)
                let flip: Bool
                switch mask {
                case 0: flip = (x + y) % 2 == 0
                case 1: flip = y % 2 == 0
                case 2: flip = x % 3 == 0
                case 3: flip = (x + y) % 3 == 0
                case 4: flip = (x / 3 + y / 2) % 2 == 0
                case 5: flip = x * y % 2 + x * y % 3 == 0
                case 6: flip = (x * y % 2 + x * y % 3) % 2 == 0
                default: flip = ((x + y) % 2 + x * y % 3) % 2 == 0
                }
                if flip { modules[row][column].toggle() }
            }
        }
    }
}
