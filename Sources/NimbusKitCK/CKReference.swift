import Foundation

/// A `REFERENCE` value, CloudKit's `CKRecord.Reference`. It archives with `NSSecureCoding`;
/// top-level because Linux's `NSKeyedArchiver` cannot name a nested class.
public final class CKReference: NSObject, NSSecureCoding, CKRecordValueProtocol, Sendable {
    public enum Action: UInt, Sendable { case none = 0, deleteSelf = 1 }
    public let recordID: CKRecord.ID
    public let action: Action

    public init(recordID: CKRecord.ID, action: Action) {
        self.recordID = recordID
        self.action = action
    }

    public convenience init(record: CKRecord, action: Action) { self.init(recordID: record.recordID, action: action) }

    public static var supportsSecureCoding: Bool { true }
    static let recordIDKey = "recordID", actionKey = "action"

    public func encode(with coder: NSCoder) {
        coder.encode(recordID, forKey: CKReference.recordIDKey)
        coder.encode(NSNumber(value: action.rawValue), forKey: CKReference.actionKey)
    }

    public convenience init?(coder: NSCoder) {
        guard coder.containsValue(forKey: CKReference.recordIDKey),
              let recordID = coder.decodeObject(of: CKRecordID.self, forKey: CKReference.recordIDKey) else { return nil }
        let action = coder.containsValue(forKey: CKReference.actionKey)
            ? coder.decodeObject(of: NSNumber.self, forKey: CKReference.actionKey).flatMap { Action(rawValue: $0.uintValue) } : nil
        self.init(recordID: recordID, action: action ?? .none)
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CKReference else { return false }
        return other.recordID == recordID && other.action == action
    }
    public override var hash: Int { recordID.hash }
}
