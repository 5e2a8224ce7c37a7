import Foundation
import NimbusCore
import NimbusSupport
import NimbusPostgres
@testable import NimbusStore
import Testing
import NimbusTestSupport

/// Builds `records/modify` operations tersely.
func operation(_ kind: RecordOperation.Kind, _ name: String, type: String? = "Note", tag: String? = nil,
               _ fields: [String: JSONValue] = [:]) -> Result<RecordOperation, ItemError> {
    .success(RecordOperation(kind: kind, recordName: name, recordType: type, changeTag: tag,
                             fields: fields.sorted { $0.key < $1.key }.map { RawField(name: $0.key, value: $0.value) }))
}
