import Foundation
import NimbusSupport
import Testing
@testable import NimbusPush

/// The relay protocol's signing rules, pure (docs/push.md "The relay").
@Suite struct RelaySignatureTests {
    let credentials: RelayCredentials
    init() throws {
        credentials = try RelayCredentials(name: "op1", installationID: "ri_AAAAAAAAAAAAAAAA", secret: "rs_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")
    }
    static let body = Array(#"{"x":1}"#.utf8)
    static let nonce = "bm9uY2Utbm9uY2Utbm9uY2U"

    /// Vectors computed with Python's hashlib/hmac from the documented rule, so the rule is the
    /// document's and not only this code's.
    @Test func signatureMatchesAnIndependentComputationOfTheDocumentedRule() {
        #expect(RelaySignature.hex(credentials.signingKey) == "5bfb34ca97fa3b86c67143929e9a43786db57a95d732e3f98eaca0020bce1235")
        let signature = RelaySignature.sign(method: "POST", path: "/v1/push", body: Self.body, credentials: credentials,
                                            timestamp: 1_790_000_000, nonce: Self.nonce)
        #expect(signature.signature == "6be07d9a6d9b78529daee68d8ddf95ab7339025feb317ff1a862093ee834ff16")
        #expect(signature.headerFields.map(\.name) == ["Nimbus-Relay-Installation", "Nimbus-Relay-Timestamp", "Nimbus-Relay-Nonce", "Nimbus-Relay-Signature"])
    }

    @Test func aSignatureVerifiesOnlyForTheExactRequestAndKey() {
        let signature = RelaySignature.sign(method: "POST", path: "/v1/push", body: Self.body, credentials: credentials, timestamp: 1_790_000_000)
        let key = credentials.signingKey
        #expect(signature.verifies(method: "POST", path: "/v1/push", body: Self.body, signingKey: key))
        #expect(!signature.verifies(method: "PUT", path: "/v1/push", body: Self.body, signingKey: key))
        #expect(!signature.verifies(method: "POST", path: "/v1/pushx", body: Self.body, signingKey: key))
        #expect(!signature.verifies(method: "POST", path: "/v1/push", body: Array(#"{"x":2}"#.utf8), signingKey: key))
        #expect(!signature.verifies(method: "POST", path: "/v1/push", body: Self.body, signingKey: RelayCredentials.signingKey(secret: "rs_other")))
        for change in [{ (s: inout RelaySignature) in s.timestamp += 1 }, { $0.nonce = "AAAAAAAAAAAAAAAAAAAAAAAA" },
                       { $0.installationID = "ri_BBBBBBBBBBBBBBBB" }, { $0.signature = String($0.signature.reversed()) }] {
            var altered = signature
            change(&altered)
            #expect(!altered.verifies(method: "POST", path: "/v1/push", body: Self.body, signingKey: key))
        }
        // Every signature gets its own nonce.
        let again = RelaySignature.sign(method: "POST", path: "/v1/push", body: Self.body, credentials: credentials, timestamp: 1_790_000_000)
        #expect(again.nonce != signature.nonce && again.signature != signature.signature)
    }

    @Test func headersAreAllOrNothingAndEachIsChecked() throws {
        let good = RelaySignature.sign(method: "POST", path: "/v1/push", body: Self.body, credentials: credentials, timestamp: 1_790_000_000)
        func parse(_ fields: [(String, String)]) -> Result<RelaySignature, RelaySignature.ParseError>? {
            RelaySignature.parse { name in fields.filter { $0.0.lowercased() == name.lowercased() }.map(\.1) }
        }
        #expect(parse([]) == nil)
        #expect(try parse(good.headerFields.map { ($0.name, $0.value) })?.get() == good)
        let cases: [(String, String?, String)] = [
            ("Nimbus-Relay-Nonce", nil, "missing"), ("Nimbus-Relay-Timestamp", "12.5", "whole number"), ("Nimbus-Relay-Timestamp", "-5", "whole number"),
            ("Nimbus-Relay-Nonce", "short", "16 to 64"), ("Nimbus-Relay-Signature", String(repeating: "A", count: 64), "lower-case hex"),
            ("Nimbus-Relay-Installation", "op1", "installation id"),
        ]
        for (name, value, expected) in cases {
            var fields = good.headerFields.map { ($0.name, $0.value) }.filter { $0.0 != name }
            if let value { fields.append((name, value)) }
            guard case .failure(let error)? = parse(fields) else {
                Issue.record("\(name)=\(value ?? "nil") was accepted")
                continue
            }
            #expect(error.description.contains(expected), "\(error)")
        }
        var doubled = good.headerFields.map { ($0.name, $0.value) }
        doubled.append(("nimbus-relay-signature", good.signature))
        guard case .failure(let error)? = parse(doubled) else { Issue.record("a repeated header was accepted"); return }
        #expect(error.description.contains("more than once"))
    }

    @Test func credentialsFileRoundTripsAndRefusesWhatItDidNotWrite() throws {
        let made = try RelayCredentials.make(name: "alice-home.example")
        #expect(try RelayCredentials.parse(made.fileText) == made)
        #expect(!made.description.contains(made.secret))
        let other = try RelayCredentials.make(name: "alice-home.example")
        #expect(other.installationID != made.installationID && other.secret != made.secret)
        let lines = made.fileText.split(separator: "\n").map(String.init)
        let refusals: [(String, String)] = [
            (lines.filter { !$0.hasPrefix("secret:") }.joined(separator: "\n"), "'secret:' line is missing"),
            (made.fileText + "id: \(made.installationID)\n", "given twice"),
            (made.fileText + "url: https://relay\n", "unknown key"),
            (made.fileText.replacingOccurrences(of: made.secret, with: "rs_short"), "secret is not"),
            ("garbage", "not 'key: value'"),
        ]
        for (text, expected) in refusals {
            #expect(throws: RelayCredentials.InvalidError.self) { try RelayCredentials.parse(text) }
            do { _ = try RelayCredentials.parse(text) } catch { #expect(error.description.contains(expected), "\(error)") }
        }
        #expect(throws: RelayCredentials.InvalidError.self) { try RelayCredentials.make(name: "has space") }
    }

    @Test func relayURLsMustBeHTTPSExceptOnLoopback() {
        #expect(RelayTransport.Configuration.urlProblem("https://relay.example.com") == nil)
        #expect(RelayTransport.Configuration.urlProblem("https://relay.example.com:8443/nimbus") == nil)
        #expect(RelayTransport.Configuration.urlProblem("http://127.0.0.1:8090") == nil)
        #expect(RelayTransport.Configuration.urlProblem("http://localhost:8090") == nil)
        #expect(RelayTransport.Configuration.urlProblem("http://relay.example.com")?.contains("must be https") == true)
        #expect(RelayTransport.Configuration.urlProblem("https://user:pw@relay.example.com") != nil)
        #expect(RelayTransport.Configuration.urlProblem("relay.example.com") != nil)
    }
}
