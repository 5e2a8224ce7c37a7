/// A complete response. The server adds `Date`, `Content-Length` and `Connection`.
package struct HTTPResponse: Sendable {
    package var status: HTTPStatus
    package var headers: HTTPHeaders
    package var body: [UInt8]

    package init(status: HTTPStatus, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response with a body of the given media type.
    package init(status: HTTPStatus, contentType: String, body: [UInt8], headers: HTTPHeaders = [:]) {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: contentType)
        self.init(status: status, headers: headers, body: body)
    }
}
