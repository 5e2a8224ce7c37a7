import Foundation
import NimbusAPI
import NimbusCore
import NimbusHTTP
import NimbusStore
import NimbusSupport
import NimbusTestSupport

/// What the long-poll, notification and asset suites need beside `send`: requests whose answer
/// streams or never comes (their sink plays the client), the hub's parked count, uploads with a
/// streamed body, and absolute URLs turned into paths.
extension APIFixture {
    /// The request's URLs begin with this (the fixture's `Host`).
    static let origin = "http://nimbus.test"

    /// Starts a request and returns its sink at once: the answer may stream, or never come.
    func start(_ method: String, _ path: String, token: String? = nil, body: String? = nil, headers: HTTPHeaders = [:],
               bodyStream: HTTPBodyStream? = nil, sink: CapturingSink = CapturingSink()) -> CapturingSink {
        var headers = headers
        if headers["Host"] == nil { headers.add(name: "Host", value: "nimbus.test") }
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        var request = HTTPRequest(head: HTTPRequestHead(method: method, target: path, headers: headers), body: Array((body ?? "").utf8))
        request.bodyStream = bodyStream
        api.handler(request, HTTPResponseWriter(sink: sink))
        return sink
    }

    /// Starts a database operation (`records/changes` with a wait, say) of `environment`.
    func startDatabase(_ operation: String, token: String, _ body: String = "{}", environment: String = "development") -> CapturingSink {
        start("POST", "/database/1/\(container)/\(environment)/private/\(operation)", token: token, body: body)
    }

    /// A database operation of `environment` (`production` for the apps' deployed schemas).
    func database(_ operation: String, token: String, _ body: String, environment: String, container: String? = nil) async -> Answer {
        await send("POST", "/database/1/\(container ?? self.container)/\(environment)/private/\(operation)", token: token, body: body)
    }

    /// Waits (up to `seconds`) until the hub holds `count` parked requests; whether it did.
    func parked(_ count: Int, within seconds: Double = 10) async -> Bool {
        await eventually(within: seconds) { api.store.hub.count == count }
    }

    /// A GET (or HEAD) of an absolute URL the API gave out.
    func get(_ url: String, token: String?, headers: HTTPHeaders = [:], method: String = "GET") async -> Answer {
        await start(method, Self.path(of: url), token: token, headers: headers).answer()
    }

    /// POSTs `bytes` to an upload URL, as a streamed body in `pieces` pieces (the way the HTTP core
    /// hands an upload's body to the route).
    func post(_ bytes: [UInt8], to url: String, token: String?, pieces: Int = 3, headers: HTTPHeaders = [:]) async -> Answer {
        let stream = HTTPBodyStream(resumeReading: {})
        let sink = start("POST", Self.path(of: url), token: token, headers: headers, bodyStream: stream)
        let size = max(1, (bytes.count + pieces - 1) / max(pieces, 1))
        var offset = 0
        while offset < bytes.count {
            _ = stream.append(Array(bytes[offset..<min(offset + size, bytes.count)]))
            offset += size
        }
        stream.finish()
        return await sink.answer()
    }

    /// A fresh upload URL for `recordType.field` (in `zone`, of `environment`/`container`).
    func uploadURL(token: String, recordType: String = "Blob", field: String = "data", zone: String? = nil,
                   environment: String = "development", container: String? = nil) async -> String {
        let zoneMember = zone.map { #""zoneID":{"zoneName":"\#($0)"},"# } ?? ""
        let answer = await database("assets/upload", token: token, #"{\#(zoneMember)"tokens":[{"recordType":"\#(recordType)","fieldName":"\#(field)"}]}"#,
                                    environment: environment, container: container)
        return answer.items("tokens").first?["url"]?.stringValue ?? "no upload URL in \(answer)"
    }

    /// Uploads `bytes` to a fresh upload URL; the answer's `singleFile`.
    func upload(_ bytes: [UInt8], token: String, recordType: String = "Blob", field: String = "data", environment: String = "development",
                container: String? = nil) async -> UploadedFile {
        let url = await uploadURL(token: token, recordType: recordType, field: field, environment: environment, container: container)
        return UploadedFile(await post(bytes, to: url, token: token))
    }

    /// The path of an absolute URL the API gave out (or the text itself when it is not one).
    static func path(of url: String) -> String {
        guard let scheme = url.range(of: "://"), let slash = url[scheme.upperBound...].firstIndex(of: "/") else { return url }
        return String(url[slash...])
    }
}

/// An upload's answer: the `singleFile` members, and the field value that saves it in a record.
struct UploadedFile: Sendable {
    var answer: Answer
    var checksum: String { answer.json["singleFile"]?["fileChecksum"]?.stringValue ?? "" }
    var size: Int64 { answer.json["singleFile"]?["size"]?.int64Value ?? -1 }
    var receipt: String { answer.json["singleFile"]?["receipt"]?.stringValue ?? "" }
    var field: String { assetField(checksum: checksum, size: size, receipt: receipt) }

    init(_ answer: Answer) { self.answer = answer }
}

/// An ASSETID field value (JSON).
func assetField(checksum: String, size: Int64, receipt: String) -> String {
    #"{"value":{"fileChecksum":"\#(checksum)","size":\#(size),"receipt":"\#(receipt)"},"type":"ASSETID"}"#
}

/// The base64 SHA-256 of `bytes`: an asset's fileChecksum.
func checksum(_ bytes: [UInt8]) -> String {
    Data(SHA256.hash(bytes)).base64EncodedString()
}

/// `count` random bytes.
func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBytes { buffer in
        var offset = 0
        while offset < count {
            withUnsafeBytes(of: generator.next() as UInt64) { word in
                for byte in word where offset < count {
                    buffer[offset] = byte
                    offset += 1
                }
            }
        }
    }
    return bytes
}

/// Polls `condition` every 5 ms for up to `seconds`; whether it held.
func eventually(within seconds: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { return false }
        try? await Task.sleep(nanoseconds: 5_000_000)
    }
    return true
}

extension Answer {
    /// The body after the heartbeat spaces a waiting answer may begin with, parsed.
    var trimmedJSON: JSONValue {
        (try? JSONValue.parse(body.drop(while: { $0 == 0x20 }))) ?? .null
    }

    /// The record of an answer's `records` named `name`.
    func record(_ name: String) -> JSONValue? {
        items("records").first { $0["recordName"]?.stringValue == name }
    }

    /// A record's field `field`'s asset member (`downloadURL`, `fileChecksum`, `size`).
    func asset(_ name: String, _ field: String = "data") -> JSONValue? {
        record(name)?["fields"]?[field]?["value"]
    }

    /// Each record item's serverErrorCode, or "ok".
    var itemCodes: [String] { items("records").map { $0["serverErrorCode"]?.stringValue ?? "ok" } }

    /// A header's value.
    func header(_ name: String) -> String? { headers[name] }
}
