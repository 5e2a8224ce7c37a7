import NimbusSupport

/// How a push to the relay is signed (docs/push.md "The relay"): HMAC-SHA256, under the
/// installation's signing key, over
///
///     nimbus-relay-v1 \n METHOD \n PATH \n INSTALLATION-ID \n TIMESTAMP \n NONCE \n hex(SHA-256(body))
///
/// sent as four headers. Pure: the same value signs (the operator's server) and verifies (the relay).
package struct RelaySignature: Sendable, Equatable {
    package static let installationHeader = "Nimbus-Relay-Installation"
    package static let timestampHeader = "Nimbus-Relay-Timestamp"
    package static let nonceHeader = "Nimbus-Relay-Nonce"
    package static let signatureHeader = "Nimbus-Relay-Signature"
    /// The first line of the signed text: a signature for another protocol or version never verifies.
    package static let scheme = "nimbus-relay-v1"

    package var installationID: String
    /// Seconds since the Unix epoch, when the request was signed.
    package var timestamp: Int64
    /// 16–64 base64url characters, new for every request (the relay refuses a nonce it has seen).
    package var nonce: String
    /// 64 lower-case hex digits.
    package var signature: String

    package init(installationID: String, timestamp: Int64, nonce: String, signature: String) {
        self.installationID = installationID
        self.timestamp = timestamp
        self.nonce = nonce
        self.signature = signature
    }

    /// The text that is signed.
    package static func signedText(method: String, path: String, installationID: String, timestamp: Int64, nonce: String,
                                   body: [UInt8]) -> String {
        [scheme, method, path, installationID, String(timestamp), nonce, hex(SHA256.hash(body))].joined(separator: "\n")
    }

    /// Signs a request with `credentials` at `timestamp`, with a fresh random nonce unless one is given.
    package static func sign(method: String, path: String, body: [UInt8], credentials: RelayCredentials, timestamp: Int64,
                             nonce: String = makeNonce()) -> RelaySignature {
        let text = signedText(method: method, path: path, installationID: credentials.installationID, timestamp: timestamp,
                              nonce: nonce, body: body)
        let mac = HMACSHA256.authenticate(text, key: credentials.signingKey)
        return RelaySignature(installationID: credentials.installationID, timestamp: timestamp, nonce: nonce, signature: hex(mac))
    }

    /// Whether this signature is right for the request under `signingKey`, compared in constant time.
    package func verifies(method: String, path: String, body: [UInt8], signingKey: [UInt8]) -> Bool {
        let text = Self.signedText(method: method, path: path, installationID: installationID, timestamp: timestamp, nonce: nonce, body: body)
        let expected = Array(Self.hex(HMACSHA256.authenticate(text, key: signingKey)).utf8)
        return constantTimeEquals(expected, Array(signature.utf8))
    }

    /// The four headers, as (name, value).
    package var headerFields: [(name: String, value: String)] {
        [(Self.installationHeader, installationID), (Self.timestampHeader, String(timestamp)), (Self.nonceHeader, nonce),
         (Self.signatureHeader, signature)]
    }

    /// Reads the four headers (`value` gives every value of a header name). Nil: none of them is
    /// present (no credentials at all); a failure names the header that is missing, repeated or malformed.
    package static func parse(headerValues value: (String) -> [String]) -> Result<RelaySignature, ParseError>? {
        let names = [installationHeader, timestampHeader, nonceHeader, signatureHeader]
        let values = names.map(value)
        if values.allSatisfy(\.isEmpty) { return nil }
        for (name, found) in zip(names, values) where found.count != 1 {
            return .failure(ParseError(description: found.isEmpty ? "the \(name) header is missing" : "the \(name) header is given more than once"))
        }
        let (id, timestampText, nonce, signature) = (values[0][0], values[1][0], values[2][0], values[3][0])
        guard RelayCredentials.isInstallationID(id) else {
            return .failure(ParseError(description: "the \(installationHeader) header is not an installation id"))
        }
        guard timestampText.utf8.count <= 12, timestampText.utf8.allSatisfy({ (48...57).contains($0) }), let timestamp = Int64(timestampText) else {
            return .failure(ParseError(description: "the \(timestampHeader) header is not a whole number of seconds since 1970"))
        }
        guard (16...64).contains(nonce.utf8.count), nonce.utf8.allSatisfy(isBase64URL) else {
            return .failure(ParseError(description: "the \(nonceHeader) header is not 16 to 64 base64url characters"))
        }
        guard signature.utf8.count == 64, signature.utf8.allSatisfy(isLowerHex) else {
            return .failure(ParseError(description: "the \(signatureHeader) header is not 64 lower-case hex digits"))
        }
        return .success(RelaySignature(installationID: id, timestamp: timestamp, nonce: nonce, signature: signature))
    }

    package struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        package var description: String
    }

    /// 18 random bytes as 24 base64url characters.
    package static func makeNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<18).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    package static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func isBase64URL(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (97...102).contains(byte)
    }
}
