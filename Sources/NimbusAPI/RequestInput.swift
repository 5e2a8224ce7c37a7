import NimbusCore
import NimbusStore
import NimbusSupport

/// What every route reads from a request the same way: the bearer token and a JSON object body
/// (the device listener's routes and the admin API's).
package enum RequestInput {
    /// `Authorization: Bearer <token>` → the token's SHA-256. `credential` names the token in the
    /// errors ("token", "admin token"); `hint` is added to the error for a missing header.
    package static func bearerDigest(_ header: String?, credential: String = "token", hint: String = "") throws(SyncError) -> [UInt8] {
        guard var header else {
            throw SyncError(.authenticationRequired, "This request needs an Authorization: Bearer <\(credential)> header\(hint).")
        }
        // Two words between runs of spaces, over the contiguous bytes: splitting the UTF-8 view
        // cost as much as hashing the token.
        let digest: [UInt8]? = header.withUTF8 { bytes in
            var index = 0
            func word() -> Range<Int> {
                while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
                let start = index
                while index < bytes.count, bytes[index] != UInt8(ascii: " ") { index += 1 }
                return start..<index
            }
            let scheme = word(), token = word()
            guard word().isEmpty, !token.isEmpty, scheme.count == 6,
                  zip(bytes[scheme], "bearer".utf8).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
            return AccountStore.tokenDigest(utf8: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[token])))
        }
        guard let digest else {
            throw SyncError(.authenticationFailed, "The Authorization header must be \"Bearer <\(credential)>\".")
        }
        return digest
    }

    /// A request body as a JSON object; an empty (or all-whitespace) body is `{}`.
    package static func parseBody(_ bytes: [UInt8]) throws -> JSONValue {
        if bytes.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 10 || $0 == 13 }) { return .object([:]) }
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw SyncError(.badRequest, "The body is not valid JSON: \(error.description)")
        }
        guard case .object = value else { throw SyncError(.badRequest, "The body must be a JSON object.") }
        return value
    }
}
