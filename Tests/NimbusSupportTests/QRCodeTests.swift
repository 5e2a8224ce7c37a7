import Foundation
import Testing
@testable import NimbusSupport

/// The QR encoder against the standard's published values, and every drawing of it against a
/// real decoder (`zbarimg` from Debian's zbar-tools, installed by Tests/run.sh).
@Suite("QR Code encoder")
struct QRCodeTests {
    @Test func reedSolomonMatchesThePublishedOneMExample() {
        // ISO/IEC 18004 annex I / the "HELLO WORLD" 1-M example: 16 data codewords, 10 EC codewords.
        let data: [UInt8] = [32, 91, 11, 120, 209, 114, 220, 77, 67, 64, 236, 17, 236, 17, 236, 17]
        #expect(QRReedSolomon.errorCorrection(for: data, count: 10) == [196, 35, 39, 119, 235, 215, 231, 226, 93, 23])
    }

    @Test func formatAndVersionBitsMatchTheStandardsTables() {
        // Table C.1, level M (indicator 00), masks 0–7.
        let expected = ["101010000010010", "101000100100101", "101111001111100", "101101101001011",
                        "100010111111001", "100000011001110", "100111110010111", "100101010100000"]
        for mask in 0..<8 {
            #expect(String(QRCode.formatBits(mask: mask), radix: 2).leftPadded(15) == expected[mask], "mask \(mask)")
        }
        // Table D.1.
        #expect(QRCode.versionBits(7) == 0b000111_110010010100)
        #expect(QRCode.versionBits(10) == 0b001010_010011010011)
    }

    @Test func capacitiesAndVersionsFollowTheTables() throws {
        #expect(QRVersion.all.map(\.byteCapacity).prefix(10) == [14, 26, 42, 62, 84, 106, 122, 152, 180, 213])
        #expect(QRVersion.all.allSatisfy { $0.dataCodewords + $0.ecCodewordsPerBlock * $0.blockDataCodewords.count
            == QRVersion.totalCodewords[$0.number - 1] })
        #expect(try QRCode(text: String(repeating: "a", count: 14)).version.number == 1)
        #expect(try QRCode(text: String(repeating: "a", count: 15)).version.number == 2)
        #expect(try QRCode(text: String(repeating: "a", count: 200)).version.number == 10)
        #expect(throws: QRCode.Failure.self) { try QRCode(text: String(repeating: "a", count: 500)) }
    }

    @Test func pairingURLsOfFortyToTwoHundredCharactersDecodeBack() throws {
        for length in [40, 41, 64, 90, 107, 123, 150, 153, 181, 200] {
            let url = pairingURL(length: length)
            let code = try QRCode(text: url)
            #expect(try decode(code.pgm()) == url, "length \(length), version \(code.version.number)")
        }
    }

    @Test func everyMaskPatternDecodes() throws {
        let url = pairingURL(length: 120)
        for mask in 0..<8 {
            let code = try QRCode(text: url, mask: mask)
            #expect(code.mask == mask)
            #expect(try decode(code.pgm()) == url, "mask \(mask)")
        }
    }

    @Test func theTerminalDrawingIsTheSameSymbol() throws {
        let url = pairingURL(length: 96)
        let code = try QRCode(text: url)
        let text = code.terminalText()
        #expect(QRCode.modules(fromTerminalText: text) == code.modules)
        #expect(text.split(separator: "\n").allSatisfy { $0.count == code.size + 2 * QRCode.quietZone })
        #expect(code.svg().hasPrefix("<svg"))
    }

    private func pairingURL(length: Int) -> String {
        let base = "nimbus://pair?server=https%3A%2F%2Fsync.example.org&code=ABCDEFGHJK"
        if length <= base.count { return String(base.prefix(length)) }
        return base + "#k=" + String(repeating: "x", count: length - base.count - 3)
    }

    private func decode(_ pgm: [UInt8]) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("qr-\(UUID().uuidString).pgm")
        try Data(pgm).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/zbarimg")
        process.arguments = ["--raw", "-q", "-Sdisable", "-Sqrcode.enable", file.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
