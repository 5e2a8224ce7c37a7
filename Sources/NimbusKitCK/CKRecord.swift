import Foundation

/// The values a record field takes (CloudKit's `CKRecordValueProtocol`).
public protocol CKRecordValueProtocol: Sendable {}
/// CloudKit's name for a field value: `record["title"] = title as CKRecordValue`.
public typealias CKRecordValue = any CKRecordValueProtocol

extension String: CKRecordValueProtocol {}
extension Int: CKRecordValueProtocol {}
extension Int64: CKRecordValueProtocol {}
extension Int32: CKRecordValueProtocol {}
extension Double: CKRecordValueProtocol {}
extension Float: CKRecordValueProtocol {}
extension Bool: CKRecordValueProtocol {}
extension Date: CKRecordValueProtocol {}
extension Data: CKRecordValueProtocol {}
extension NSNumber: CKRecordValueProtocol {}
extension Array: CKRecordValueProtocol where Element: CKRecordValueProtocol {}

/// A record, as CloudKit's class: fields by subscript, system fields read-only. It archives with
/// `NSSecureCoding` whole (`encode(with:)`) or as its system fields (`encodeSystemFields(with:)`).
public final class CKRecord: NSObject, NSSecureCoding, @unchecked Sendable {
    // Safe as CloudKit's CKRecord is: one owner mutates it at a time; the lock guards the storage.
    let storage: Locked<Record>
    /// Where a fetched record's assets download from.
    let database: Database?
    /// What CloudKit keeps beside the fields and Nimbus does not send (`parent`).
    let extras = Locked(CKRecordExtras())

    public init(recordType: String, recordID: ID = ID(recordName: UUID().uuidString)) {
        storage = Locked(Record(recordType: recordType, id: recordID.nimbus))
        database = nil
    }

    public convenience init(recordType: String, zoneID: CKRecordZone.ID) {
        self.init(recordType: recordType, recordID: ID(recordName: UUID().uuidString, zoneID: zoneID))
    }

    init(record: Record, database: Database? = nil) {
        storage = Locked(record)
        self.database = database
    }

    /// The NimbusKit record underneath.
    public var record: Record { storage.withLock { $0 } }

    public var recordID: ID { ID(storage.withLock { $0.id }) }
    public var recordType: String { storage.withLock { $0.recordType } }
    public var recordChangeTag: String? { storage.withLock { $0.changeTag } }
    public var creationDate: Date? { storage.withLock { $0.created?.timestamp } }
    public var modificationDate: Date? { storage.withLock { $0.modified?.timestamp } }
    public override var description: String { "<CKRecord \(recordType) \(recordID.recordName)>" }

    public func allKeys() -> [String] { storage.withLock { $0.fields.keys.sorted() } }
    public func changedKeys() -> [String] { storage.withLock { $0.changedKeys } }

    public subscript(key: String) -> CKRecordValue? {
        get { storage.withLock { $0.fields[key] }.flatMap { CKRecord.ckValue($0, database: database) } }
        set { storage.withLock { $0.fields[key] = newValue.flatMap(CKRecord.recordValue) } }
    }

    public func object(forKey key: String) -> CKRecordValue? { self[key] }
    public func setObject(_ object: CKRecordValue?, forKey key: String) { self[key] = object }

#if canImport(Darwin)
    // Key-value coding over the fields, overriding NSObject's (Linux's NSObject has none: CKRecord+CloudKit.swift).
    public override func setValuesForKeys(_ keyedValues: [String: Any]) {
        for (key, value) in keyedValues { setValue(value, forKey: key) }
    }
    public override func setValue(_ value: Any?, forKey key: String) { self[key] = value as? any CKRecordValueProtocol }
    public override func value(forKey key: String) -> Any? { self[key] }
    public override func dictionaryWithValues(forKeys keys: [String]) -> [String: Any] { fieldValues(forKeys: keys) }
#endif

    /// A record's identity (`CKRecordID`, archived with `NSSecureCoding`).
    public typealias ID = CKRecordID

    /// A `REFERENCE` value (`CKReference`, archived with `NSSecureCoding`).
    public typealias Reference = CKReference

    // MARK: - Values both ways

    static func recordValue(_ value: CKRecordValue) -> RecordValue? {
        switch value {
        case let v as String: return .string(v)
        case let v as Bool: return .int64(v ? 1 : 0)
        case let v as Int: return .int64(Int64(v))
        case let v as Int64: return .int64(v)
        case let v as Int32: return .int64(Int64(v))
        case let v as Double: return .double(v)
        case let v as Float: return .double(Double(v))
        case let v as NSNumber:
            let kind = String(cString: v.objCType)
            return kind == "d" || kind == "f" ? .double(v.doubleValue) : .int64(v.int64Value)
        case let v as Date: return .date(v)
        case let v as Data: return .bytes(v)
        case let v as Reference:
            return .reference(NimbusKit.Reference(recordID: v.recordID.nimbus, action: v.action == .deleteSelf ? .deleteSelf : .none))
        case let v as CKAsset: return .asset(v.asset)
        case let v as [String]: return .strings(v)
        case let v as [Int]: return .int64s(v.map(Int64.init))
        case let v as [Int64]: return .int64s(v)
        case let v as [Double]: return .doubles(v)
        case let v as [Date]: return .dates(v)
        case let v as [Data]: return .list(v.map(RecordValue.bytes), elementType: .bytes)
        case let v as [Reference]: return .list(v.compactMap(recordValue), elementType: .reference)
        case let v as [CKAsset]: return .list(v.map { .asset($0.asset) }, elementType: .asset)
        default: return nil
        }
    }

    static func ckValue(_ value: RecordValue, database: Database? = nil) -> CKRecordValue? {
        switch value {
        case .string(let v): return v
        case .int64(let v): return NSNumber(value: v)
        case .double(let v): return NSNumber(value: v)
        case .date(let v): return v
        case .bytes(let v): return v
        case .reference(let v):
            return Reference(recordID: ID(v.recordID), action: v.action == .deleteSelf ? .deleteSelf : .none)
        case .asset(let v): return CKAsset(asset: v, database: database)
        case .list(let values, let type):
            switch type {
            case .string: return values.compactMap(\.stringValue)
            case .int64: return values.compactMap(\.int64Value)
            case .double: return values.compactMap(\.doubleValue)
            case .timestamp: return values.compactMap(\.dateValue)
            case .bytes: return values.compactMap(\.bytesValue)
            case .reference: return values.compactMap { ckValue($0) as? Reference }
            case .asset: return values.compactMap { ckValue($0, database: database) as? CKAsset }
            default: return nil
            }
        case .encrypted(let v): return v.plaintext.flatMap { ckValue($0, database: database) }
        }
    }
}

