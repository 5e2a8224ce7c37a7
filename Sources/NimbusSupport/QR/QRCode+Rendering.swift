/// Drawing a symbol: text for a terminal, SVG for a page, PGM for a decoder. Each keeps the
/// four-module quiet zone of §6.3.8.
extension QRCode {
    package static let quietZone = 4

    private func isDark(row: Int, column: Int) -> Bool {
        let r = row - QRCode.quietZone, c = column - QRCode.quietZone
        return r >= 0 && r < size && c >= 0 && c < size && modules[r][c]
    }

    /// Two module rows per text line with half blocks, light modules drawn (for the light-on-dark
    /// terminals most people use; `qrencode -t UTF8` draws the same way).
    package func terminalText() -> String {
        let total = size + 2 * QRCode.quietZone
        var lines: [String] = []
        for row in stride(from: 0, to: total, by: 2) {
            var line = ""
            for column in 0..<total {
                let top = !isDark(row: row, column: column)
                let bottom = row + 1 < total && !isDark(row: row + 1, column: column)
                switch (top, bottom) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// An SVG image, one unit per module, dark modules as one path.
    package func svg() -> String {
        let total = size + 2 * QRCode.quietZone
        var path = ""
        for row in 0..<size {
            for column in 0..<size where modules[row][column] {
                path += "M\(column + QRCode.quietZone) \(row + QRCode.quietZone)h1v1h-1z"
            }
        }
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(total) \(total)\" shape-rendering=\"crispEdges\">"
            + "<rect width=\"\(total)\" height=\"\(total)\" fill=\"#fff\"/><path d=\"\(path)\" fill=\"#000\"/></svg>"
    }

    /// A binary PGM (P5) image with `scale` pixels per module.
    package func pgm(scale: Int = 4) -> [UInt8] {
        let total = (size + 2 * QRCode.quietZone) * scale
        var bytes = Array("P5\n\(total) \(total)\n255\n".utf8)
        bytes.reserveCapacity(bytes.count + total * total)
        for y in 0..<total {
            for x in 0..<total { bytes.append(isDark(row: y / scale, column: x / scale) ? 0 : 255) }
        }
        return bytes
    }

    /// Reads `terminalText()` back into modules (quiet zone removed): lets a test check the
    /// terminal drawing itself with a decoder.
    package static func modules(fromTerminalText text: String) -> [[Bool]] {
        var rows: [[Bool]] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var top: [Bool] = []
            var bottom: [Bool] = []
            for character in line {
                top.append(character == " " || character == "▄")
                bottom.append(character == " " || character == "▀")
            }
            rows.append(top)
            rows.append(bottom)
        }
        let width = rows.first?.count ?? 0
        let size = width - 2 * quietZone
        guard size > 0, rows.count >= size + quietZone else { return [] }
        return (0..<size).map { r in Array(rows[r + quietZone][quietZone..<(quietZone + size)]) }
    }
}
