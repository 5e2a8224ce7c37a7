import Foundation
import NimbusSupport

/// A reference from one record to another (docs/api.md `REFERENCE`).
package struct RecordReference: Sendable, Hashable {
    /// `NONE` or `DELETE_SELF` (NimbusWire's, shared with the client's writer).
    package typealias Action = ReferenceAction

    package var recordName: String
    /// The target's zone; nil means the referencing record's zone.
    package var zoneName: String?
    package var action: Action

    package init(recordName: String, zoneName: String? = nil, action: Action = .none) {
        self.recordName = recordName
        self.zoneName = zoneName
        self.action = action
    }
}

/// An asset a record field points at (docs/api.md `ASSETID`).
package struct AssetValue: Sendable, Hashable {
    package var fileChecksum: String
    package var size: Int64
    package var receipt: String?
    package var downloadURL: String?

    package init(fileChecksum: String, size: Int64, receipt: String? = nil, downloadURL: String? = nil) {
        self.fileChecksum = fileChecksum
        self.size = size
        self.receipt = receipt
        self.downloadURL = downloadURL
    }
}

/// One typed field value.
package enum FieldValue: Sendable, Hashable {
    case string(String)
    case int64(Int64)
    case double(Double)
    /// Milliseconds since the Unix epoch.
    case timestamp(Int64)
    case bytes([UInt8])
    case reference(RecordReference)
    case asset(AssetValue)
    /// A `_LIST` value: elements all of `elementType`.
    case list(elementType: FieldType.Base, [FieldValue])
    /// An encrypted field's value (`ENCRYPTED_BYTES`): ciphertext in standard padded base64,
    /// kept as sent (it is checked canonical, so the text is the bytes) and never looked into.
    case encrypted(String)

    package var type: FieldType {
        switch self {
        case .string: .string
        case .int64: .int64
        case .double: .double
        case .timestamp: .timestamp
        case .bytes: .bytes
        case .reference: .reference
        case .asset: .assetID
        case .list(let element, _): FieldType(element, isList: true)
        case .encrypted: .encryptedBytes
        }
    }

    /// Every asset in the value (an ASSETID, or the elements of an ASSETID_LIST).
    package var assets: [AssetValue] {
        switch self {
        case .asset(let asset): [asset]
        case .list(_, let values): values.flatMap(\.assets)
        default: []
        }
    }

    /// Whether `assets` is not empty, without collecting them.
    package var hasAssets: Bool {
        switch self {
        case .asset: true
        case .list(_, let values): values.contains { $0.hasAssets }
        default: false
        }
    }

    /// The value as stored: assets keep only checksum and size (receipts are checked on save,
    /// download URLs are made when answering).
    package var storedForm: FieldValue {
        switch self {
        case .asset(let asset): .asset(AssetValue(fileChecksum: asset.fileChecksum, size: asset.size))
        case .list(let type, let values) where type == .assetID: .list(elementType: type, values.map(\.storedForm))
        default: self
        }
    }

    /// The same value with download URLs filled in for its assets.
    package func withDownloadURLs(_ url: (AssetValue) -> String) -> FieldValue {
        switch self {
        case .asset(var asset):
            asset.downloadURL = url(asset)
            return .asset(asset)
        case .list(let type, let values) where type == .assetID:
            return .list(elementType: type, values.map { $0.withDownloadURLs(url) })
        default:
            return self
        }
    }

    /// Every reference in the value (a REFERENCE, or the elements of a REFERENCE_LIST).
    package var references: [RecordReference] {
        switch self {
        case .reference(let reference): [reference]
        case .list(_, let values): values.flatMap(\.references)
        default: []
        }
    }
}

/// Why a wire value does not fit its type.
package struct FieldValueError: Error, Sendable, Hashable {
    /// What the value looked like, e.g. "a string", "an integer".
    package var given: String
}

extension FieldValue {
    /// Reads a wire `value` of the given type. Throws with a description of what was given.
    package static func decode(_ json: JSONValue, as type: FieldType) throws(FieldValueError) -> FieldValue {
        if type.isEncrypted {
            guard case .string(let text) = json else { throw FieldValueError(given: json.kindDescription) }
            guard !text.isEmpty else { throw FieldValueError(given: "an empty string (ciphertext cannot be empty)") }
            guard Base64Text.isStandardPadded(text) else { throw FieldValueError(given: "a string that is not standard padded base64") }
            return .encrypted(text)
        }
        if type.isList {
            guard case .array(let elements) = json else { throw FieldValueError(given: json.kindDescription) }
            var values: [FieldValue] = []
            values.reserveCapacity(elements.count)
            for element in elements {
                values.append(try decode(element, as: type.element))
            }
            return .list(elementType: type.base, values)
        }
        switch (type.base, json) {
        case (.string, .string(let text)):
            // PostgreSQL's text and jsonb cannot hold U+0000.
            guard !text.containsNUL else { throw FieldValueError(given: "a string containing U+0000, which cannot be stored") }
            return .string(text)
        case (.int64, .integer(let number)):
            return .int64(number)
        case (.double, .double(let number)):
            return .double(number)
        case (.double, .integer(let number)):
            return .double(Double(number))
        case (.timestamp, .integer(let number)):
            guard timestampRange.contains(number) else { throw FieldValueError(given: "a time outside the years 1–9999") }
            return .timestamp(number)
        case (.timestamp, .double(let number)) where number.isFinite && number != number.rounded():
            // Ambiguous input is refused (docs/api.md): a fraction of a millisecond is not rounded away.
            throw FieldValueError(given: "a number with a fraction (TIMESTAMP values are whole milliseconds since 1970)")
        case (.timestamp, .double(let number)) where number.isFinite && abs(number) < 9e15:
            let milliseconds = Int64(number.rounded(.down))
            guard timestampRange.contains(milliseconds) else { throw FieldValueError(given: "a time outside the years 1–9999") }
            return .timestamp(milliseconds)
        case (.bytes, .string(let text)):
            guard let data = Data(base64Encoded: text) else { throw FieldValueError(given: "a string that is not base64") }
            return .bytes(Array(data))
        case (.reference, .object(let object)):
            guard case .string(let name)? = object[.recordName] else {
                throw FieldValueError(given: "an object without a string recordName")
            }
            guard Names.isValidRecordName(name) else { throw FieldValueError(given: "a reference to an invalid record name") }
            var zoneName: String?
            if let zone = object[.zoneID], !zone.isNull {
                guard case .string(let zoneText)? = zone[.zoneName], Names.isValidZoneName(zoneText) else {
                    throw FieldValueError(given: "a reference whose zoneID has no valid zoneName")
                }
                zoneName = zoneText
            }
            var action = RecordReference.Action.none
            if let actionValue = object[.action], !actionValue.isNull {
                guard case .string(let text) = actionValue, let parsed = RecordReference.Action(rawValue: text) else {
                    throw FieldValueError(given: "a reference whose action is not NONE or DELETE_SELF")
                }
                action = parsed
            }
            return .reference(RecordReference(recordName: name, zoneName: zoneName, action: action))
        case (.assetID, .object(let object)):
            guard case .string(let checksum)? = object[.fileChecksum], case .integer(let size)? = object[.size], size >= 0 else {
                throw FieldValueError(given: "an object without fileChecksum and size")
            }
            var receipt: String?
            if case .string(let text)? = object[.receipt] { receipt = text }
            return .asset(AssetValue(fileChecksum: checksum, size: size, receipt: receipt))
        default:
            throw FieldValueError(given: json.kindDescription)
        }
    }

    /// TIMESTAMP values: milliseconds from 0001-01-01 to 9999-12-31, so that retention dates and
    /// database timestamps derived from them stay in range.
    package static let timestampRange: ClosedRange<Int64> = -62_135_596_800_000...253_402_300_799_999

    /// The type a development schema gives a field first seen without `type` (docs/api.md Details):
    /// string STRING, integer INT64, fraction/exponent DOUBLE, non-empty array of those the
    /// `_LIST` type (mixed integers and fractions DOUBLE_LIST); nil when not inferable.
    package static func inferType(_ json: JSONValue) -> FieldType? {
        switch json {
        case .string: return .string
        case .integer: return .int64
        case .double: return .double
        case .array(let elements):
            guard !elements.isEmpty else { return nil }
            var sawString = false, sawInteger = false, sawDouble = false
            for element in elements {
                switch element {
                case .string: sawString = true
                case .integer: sawInteger = true
                case .double: sawDouble = true
                default: return nil
                }
            }
            if sawString { return sawInteger || sawDouble ? nil : FieldType(.string, isList: true) }
            return sawDouble ? FieldType(.double, isList: true) : FieldType(.int64, isList: true)
        default:
            return nil
        }
    }

    /// The wire form of the value (the `value` member).
    package var json: JSONValue {
        switch self {
        case .string(let text): .string(text)
        case .int64(let number): .integer(number)
        case .double(let number): .double(number)
        case .timestamp(let milliseconds): .integer(milliseconds)
        case .bytes(let bytes): .string(Data(bytes).base64EncodedString())
        case .reference(let reference):
            .object(reference.json)
        case .asset(let asset):
            .object(asset.json)
        case .list(_, let values): .array(values.map(\.json))
        case .encrypted(let text): .string(text)
        }
    }

    /// Writes `json`'s bytes without building it (records are written a hundred at a time), each
    /// type's form as NimbusWire's `FieldWire` spells it.
    func writeJSON(to writer: inout JSONPageWriter) {
        switch self {
        case .string(let text), .encrypted(let text): writer.write(text)
        case .int64(let number): writer.write(number)
        case .timestamp(let milliseconds): FieldWire.writeTimestamp(milliseconds: milliseconds, to: &writer)
        case .double(let number): writer.write(number)
        case .list(_, let values):
            writer.append(FieldWire.listStart)
            for (index, value) in values.enumerated() {
                if index > 0 { writer.append(FieldWire.listSeparator) }
                value.writeJSON(to: &writer)
            }
            writer.append(FieldWire.listEnd)
        case .bytes(let bytes):
            bytes.withUnsafeBytes { FieldWire.writeBytes($0, to: &writer) }
        case .reference(let reference):
            FieldWire.writeReference(recordName: reference.recordName, zoneName: reference.zoneName, action: reference.action, to: &writer)
        case .asset(let asset):
            FieldWire.writeAsset(fileChecksum: asset.fileChecksum, size: asset.size, receipt: asset.receipt,
                                 downloadURL: asset.downloadURL, to: &writer)
        }
    }
}

// The tree forms (notifications, query parameters) in `FieldWire`'s member order.
extension RecordReference {
    var json: JSONObject {
        var object: JSONObject = [WireKey.recordName.rawValue: .string(recordName), WireKey.action.rawValue: .string(action.rawValue)]
        if let zoneName { object[WireKey.zoneID.rawValue] = .object([WireKey.zoneName.rawValue: .string(zoneName)]) }
        return object
    }
}

extension AssetValue {
    var json: JSONObject {
        var object: JSONObject = [WireKey.fileChecksum.rawValue: .string(fileChecksum), WireKey.size.rawValue: .integer(size)]
        if let receipt { object[WireKey.receipt.rawValue] = .string(receipt) }
        if let downloadURL { object[WireKey.downloadURL.rawValue] = .string(downloadURL) }
        return object
    }
}

extension JSONValue {
    /// "a string", "an integer", ... for error messages.
    package var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer: "an integer"
        case .double: "a number with a fraction"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
