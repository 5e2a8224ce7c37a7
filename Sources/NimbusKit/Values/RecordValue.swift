import Foundation

/// A typed field value, as docs/api.md's field types: `STRING`, `INT64`, `DOUBLE`, `TIMESTAMP`, `BYTES`,
/// `REFERENCE`, `ASSETID` and the `_LIST` form of each.
public enum RecordValue: Hashable, Sendable, Codable {
    case string(String)
    case int64(Int64)
    case double(Double)
    case date(Date)
    case bytes(Data)
    case reference(Reference)
    case asset(Asset)
    /// A list; `elementType` is the wire type of its elements (needed for an empty list).
    indirect case list([RecordValue], elementType: FieldType)
    /// A value stored end-to-end encrypted (`ENCRYPTED_BYTES` on the wire; docs/encryption.md).
    indirect case encrypted(EncryptedValue)

    /// The wire type name of this value (`STRING`, `INT64_LIST`, …).
    public var fieldType: FieldType {
        switch self {
        case .string: return .string
        case .int64: return .int64
        case .double: return .double
        case .date: return .timestamp
        case .bytes: return .bytes
        case .reference: return .reference
        case .asset: return .asset
        case .list(_, let elementType): return elementType.listType
        case .encrypted(let v): return v.plaintext.flatMap { $0.isAssets ? $0.fieldType : nil } ?? .encryptedBytes
        }
    }

    public var stringValue: String? { if case .string(let v) = self { return v } else { return nil } }
    public var int64Value: Int64? { if case .int64(let v) = self { return v } else { return nil } }
    public var doubleValue: Double? {
        switch self {
        case .double(let v): return v
        case .int64(let v): return Double(v)
        default: return nil
        }
    }
    public var dateValue: Date? { if case .date(let v) = self { return v } else { return nil } }
    public var bytesValue: Data? { if case .bytes(let v) = self { return v } else { return nil } }
    public var referenceValue: Reference? { if case .reference(let v) = self { return v } else { return nil } }
    public var assetValue: Asset? { if case .asset(let v) = self { return v } else { return nil } }
    public var listValue: [RecordValue]? { if case .list(let v, _) = self { return v } else { return nil } }

    /// A list of strings (`STRING_LIST`).
    public static func strings(_ values: [String]) -> RecordValue { .list(values.map(RecordValue.string), elementType: .string) }
    /// A list of integers (`INT64_LIST`).
    public static func int64s(_ values: [Int64]) -> RecordValue { .list(values.map(RecordValue.int64), elementType: .int64) }
    /// A list of doubles (`DOUBLE_LIST`).
    public static func doubles(_ values: [Double]) -> RecordValue { .list(values.map(RecordValue.double), elementType: .double) }
    /// A list of dates (`TIMESTAMP_LIST`).
    public static func dates(_ values: [Date]) -> RecordValue { .list(values.map(RecordValue.date), elementType: .timestamp) }
}

/// The wire field types of docs/api.md.
public struct FieldType: Hashable, Sendable, Codable, RawRepresentable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let string = FieldType(rawValue: "STRING")
    public static let int64 = FieldType(rawValue: "INT64")
    public static let double = FieldType(rawValue: "DOUBLE")
    public static let timestamp = FieldType(rawValue: "TIMESTAMP")
    public static let bytes = FieldType(rawValue: "BYTES")
    public static let reference = FieldType(rawValue: "REFERENCE")
    public static let asset = FieldType(rawValue: "ASSETID")
    /// A sealed value (API.md § Encrypted fields).
    public static let encryptedBytes = FieldType(rawValue: "ENCRYPTED_BYTES")

    public var isList: Bool { rawValue.hasSuffix("_LIST") }
    public var listType: FieldType { isList ? self : FieldType(rawValue: rawValue + "_LIST") }
    public var elementType: FieldType { isList ? FieldType(rawValue: String(rawValue.dropLast(5))) : self }
    public var description: String { rawValue }
}

/// A `REFERENCE` value: another record, and whether deleting it deletes the referencing record.
public struct Reference: Hashable, Sendable, Codable {
    public enum Action: String, Hashable, Sendable, Codable {
        case none = "NONE"
        case deleteSelf = "DELETE_SELF"
    }

    public var recordID: RecordID
    public var action: Action

    public init(recordID: RecordID, action: Action = .none) {
        self.recordID = recordID
        self.action = action
    }
}

/// An `ASSETID` value. Built from a local file (`Asset(fileURL:)`), it is uploaded when its record
/// is saved; fetched from the server, it carries `downloadURL` and is downloaded on demand
/// (`Database.downloadAsset`), verified against `fileChecksum`.
public struct Asset: Hashable, Sendable, Codable {
    /// A local file: the source of an upload, or the cached copy of a download.
    public var fileURL: URL?
    /// Base64 SHA-256 of the bytes.
    public var fileChecksum: String?
    public var size: Int64?
    /// The upload receipt the server checks when the record is saved.
    public var receipt: String?
    /// Where the server serves the bytes (absolute).
    public var downloadURL: URL?
    /// For an asset this app encrypts (`Container.encryptedAssetFields`): the record and field its
    /// sealed bytes are bound to. Every download opens them, and bytes that do not open are
    /// `decryptionFailed`, never data.
    var sealContext: SealContext?

    /// True when this asset's bytes on the server are sealed (an encrypted asset field): its
    /// `fileURL`, once downloaded, is the opened plaintext.
    public var isEncrypted: Bool { sealContext != nil }

    public init(fileURL: URL) { self.fileURL = fileURL }

    public init(fileChecksum: String?, size: Int64?, receipt: String? = nil, downloadURL: URL? = nil) {
        self.fileChecksum = fileChecksum
        self.size = size
        self.receipt = receipt
        self.downloadURL = downloadURL
    }

    /// True when the asset has been uploaded (or came from the server).
    public var isOnServer: Bool { receipt != nil || downloadURL != nil }

    /// Assets compare by content, as the server does (`fileChecksum` and `size`), when both are known.
    public func sameContent(as other: Asset) -> Bool {
        if let a = fileChecksum, let b = other.fileChecksum { return a == b && size == other.size }
        return self == other
    }
}
