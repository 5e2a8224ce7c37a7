import Foundation
import Testing
@testable import NimbusKit

/// `JSONScanner.base64Value` decodes canonical base64 from the page's bytes and hands everything
/// else to `Data(base64Encoded:)`: for every input its answer must be Foundation's.
@Suite("records/changes: base64 values read from the page's bytes")
struct Base64ValueTests {
    func scanned(_ text: String) throws -> Data? {
        let document = Data("[\"\(text)\"]".utf8)
        return try document.withUnsafeBytes { raw in
            var s = JSONScanner(raw.bindMemory(to: UInt8.self))
            try s.beginArray()
            var first = true
            _ = try s.nextElement(&first)
            return try s.base64Value()
        }
    }

    @Test func everyLengthAndEveryPaddingDecodesAsFoundationDoes() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let text = bytes.base64EncodedString()
            #expect(try scanned(text) == bytes, "\(length) bytes")
        }
    }

    @Test func nonCanonicalAndInvalidInputsGetFoundationsAnswer() throws {
        let inputs = ["QR==", "QQ==", "QUI=", "QUJ=", "QUJD", "Q", "QQ", "QQ=", "QQ===", "=QQ=", "Q=Q=", "QU I=", "QU-_", "QUJD\\/A==",
                      "QUJD\\u0041", "AB\u{e9}C", "////", "++++", "AAAA====", "", "QUJDRA==", "QUJDRA=A", "\\\"QQ=="]
        for text in inputs {
            let foundation = Data(base64Encoded: try JSONScanner.decodedForTest("\"\(text)\""))
            #expect(try scanned(text) == foundation, "\(text)")
        }
    }
}

extension JSONScanner {
    /// The decoded text of one JSON string (tests).
    static func decodedForTest(_ json: String) throws -> String {
        try Data(json.utf8).withUnsafeBytes { raw in
            var s = JSONScanner(raw.bindMemory(to: UInt8.self))
            return try s.stringValue() ?? ""
        }
    }
}
