import NimbusCore
import NimbusStore
import NimbusSupport
import NimbusHTTP

/// The `{"records": [...]}` answer of records/lookup and records/query, written as bytes: records
/// the store read as wire JSON go in as they are, the others are rendered (the same bytes:
/// RecordTests).
struct RecordsAnswer {
    private var bytes: [UInt8] = Array(#"{"records":["#.utf8)
    private var isEmpty = true

    private mutating func separate() {
        if !isEmpty { bytes.append(UInt8(ascii: ",")) }
        isEmpty = false
    }

    mutating func append(_ item: JSONValue) {
        separate()
        item.write(to: &bytes)
    }

    mutating func append(_ record: RecordChanges.Change, desiredKeys: Set<String>?, renderer: DatabaseRoutes.RecordRenderer) {
        separate()
        switch record {
        case .wireJSON(let json): bytes.append(contentsOf: json)
        case .record(let record): renderer.render(record, desiredKeys: desiredKeys).write(to: &bytes)
        }
    }

    /// The answer, with `continuationMarker` after the records when there is one.
    func response(continuationMarker: String? = nil) -> HTTPResponse {
        var body = bytes
        body.append(UInt8(ascii: "]"))
        if let continuationMarker {
            body.append(contentsOf: #","continuationMarker":"#.utf8)
            JSONValue.string(continuationMarker).write(to: &body)
        }
        body.append(UInt8(ascii: "}"))
        return HTTPResponse(status: .ok, contentType: "application/json; charset=utf-8", body: body)
    }
}
