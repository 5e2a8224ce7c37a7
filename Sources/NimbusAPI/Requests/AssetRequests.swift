import Foundation
import NimbusCore
import NimbusSupport

/// `assets/upload`: upload URLs to hand out, one per record field.
struct AssetUploadsRequest: JSONBodyRequest {
    struct Upload: Equatable, Sendable {
        var recordType: String
        var fieldName: String
        var recordName: String
    }

    var zoneName: String
    var uploads: [Upload]

    init(body: JSONValue, limits: Limits) throws {
        zoneName = try Wire.zoneName(body)
        guard case .array(let entries)? = body["tokens"] else {
            throw SyncError(.badRequest, "assets/upload needs a \"tokens\" array of {\"recordType\", \"fieldName\", \"recordName\"?}.")
        }
        guard entries.count <= limits.maxAssetTokensPerRequest else {
            throw SyncError(.limitExceeded, "The request asks for \(entries.count) upload URLs; maxAssetTokensPerRequest is \(limits.maxAssetTokensPerRequest).")
        }
        uploads = try entries.map { entry in
            guard case .string(let type)? = entry["recordType"], Names.isValidRecordType(type),
                  case .string(let field)? = entry["fieldName"], Names.isValidFieldName(field) else {
                throw SyncError(.badRequest, "Each token needs a valid recordType and fieldName.")
            }
            var name = UUID().uuidString
            if let value = entry["recordName"], !value.isNull {
                guard case .string(let text) = value, Names.isValidRecordName(text) else {
                    throw SyncError(.badRequest, "recordName must be 1–255 letters, digits, '-', '_', '.', ':'.")
                }
                name = text
            }
            return Upload(recordType: type, fieldName: field, recordName: name)
        }
    }
}
