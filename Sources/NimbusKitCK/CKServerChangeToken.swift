import Foundation

/// A change token of a zone (`recordZoneChanges`) or of the database (`databaseChanges`). It
/// archives with `NSSecureCoding`, as CloudKit's does, so apps keep it with `NSKeyedArchiver`.
public final class CKServerChangeToken: NSObject, NSSecureCoding, NSCopying, Sendable {
    let token: SyncToken
    init(_ token: SyncToken) { self.token = token }

    static let tokenKey = "NimbusSyncToken"
    public static var supportsSecureCoding: Bool { true }

    public func encode(with coder: NSCoder) { coder.encode(NSString(string: token.value), forKey: CKServerChangeToken.tokenKey) }

    public init?(coder: NSCoder) {
        guard coder.containsValue(forKey: CKServerChangeToken.tokenKey),
              let value = coder.decodeObject(of: NSString.self, forKey: CKServerChangeToken.tokenKey) else { return nil }
        token = SyncToken(String(describing: value))
    }

    public func copy(with zone: NSZone? = nil) -> Any { self }
    public override func isEqual(_ object: Any?) -> Bool { (object as? CKServerChangeToken)?.token == token }
    public override var hash: Int { token.hashValue }
    public override var description: String { "<CKServerChangeToken \(token.value)>" }
}
