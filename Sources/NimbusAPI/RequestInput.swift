import NimbusCore
import NimbusStore
import NimbusSupport

/// What every route reads from a request the same way: the bearer token and a JSON object body
/// (the device listener's routes and the admin API's).
package enum RequestInput {
    /// `Authorization: Bearer <token>` → the token's SHA-256. `credential` names the token in the
    /// errors ("token", "admin token"); `hint` is added to the error for a missing header.
    package static func bearerDigest(_ header: String?, credential: String = "token", hint: String = "") throws(SyncError) -> [UInt8] {
        guard let header else {
            throw SyncError(.authenticationRequired, "This request needs an Authorization: Bearer <\(credential)> header\(hint).")
        }
        // Over the bytes: splitting the header's Characters cost more than hashing the token.
        let parts = header.utf8.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lazy.map({ $0 | 0x20 }).elementsEqual("bearer".utf8) else {
            throw SyncError(.authenticationFailed, "The Authorization header must be \"Bearer <\(credential)>\".")
        }
        return AccountStore.tokenDigest(String(decoding: parts[1], as: UTF8.self))
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
