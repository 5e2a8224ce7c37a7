/// An HTTP status code with its reason phrase. An open set: statuses are `static let` members.
package struct HTTPStatus: Sendable, Hashable, CustomStringConvertible {
    package let code: Int
    package let reasonPhrase: String

    package init(code: Int, reasonPhrase: String) {
        self.code = code
        self.reasonPhrase = reasonPhrase
    }

    package var description: String { "\(code) \(reasonPhrase)" }

    package static let `continue` = HTTPStatus(code: 100, reasonPhrase: "Continue")
    package static let ok = HTTPStatus(code: 200, reasonPhrase: "OK")
    package static let noContent = HTTPStatus(code: 204, reasonPhrase: "No Content")
    package static let partialContent = HTTPStatus(code: 206, reasonPhrase: "Partial Content")
    package static let notModified = HTTPStatus(code: 304, reasonPhrase: "Not Modified")
    package static let badRequest = HTTPStatus(code: 400, reasonPhrase: "Bad Request")
    package static let unauthorized = HTTPStatus(code: 401, reasonPhrase: "Unauthorized")
    package static let forbidden = HTTPStatus(code: 403, reasonPhrase: "Forbidden")
    package static let notFound = HTTPStatus(code: 404, reasonPhrase: "Not Found")
    package static let methodNotAllowed = HTTPStatus(code: 405, reasonPhrase: "Method Not Allowed")
    package static let requestTimeout = HTTPStatus(code: 408, reasonPhrase: "Request Timeout")
    package static let conflict = HTTPStatus(code: 409, reasonPhrase: "Conflict")
    package static let gone = HTTPStatus(code: 410, reasonPhrase: "Gone")
    package static let lengthRequired = HTTPStatus(code: 411, reasonPhrase: "Length Required")
    package static let contentTooLarge = HTTPStatus(code: 413, reasonPhrase: "Content Too Large")
    package static let uriTooLong = HTTPStatus(code: 414, reasonPhrase: "URI Too Long")
    package static let rangeNotSatisfiable = HTTPStatus(code: 416, reasonPhrase: "Range Not Satisfiable")
    package static let expectationFailed = HTTPStatus(code: 417, reasonPhrase: "Expectation Failed")
    package static let tooManyRequests = HTTPStatus(code: 429, reasonPhrase: "Too Many Requests")
    package static let requestHeaderFieldsTooLarge = HTTPStatus(code: 431, reasonPhrase: "Request Header Fields Too Large")
    package static let internalServerError = HTTPStatus(code: 500, reasonPhrase: "Internal Server Error")
    package static let notImplemented = HTTPStatus(code: 501, reasonPhrase: "Not Implemented")
    package static let serviceUnavailable = HTTPStatus(code: 503, reasonPhrase: "Service Unavailable")
    package static let httpVersionNotSupported = HTTPStatus(code: 505, reasonPhrase: "HTTP Version Not Supported")
}
