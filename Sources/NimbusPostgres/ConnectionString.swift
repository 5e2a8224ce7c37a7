/// libpq connection strings as people may see them: in messages, logs and the console's
/// configuration page, never with a secret in them.
package enum ConnectionString {
    /// What stands in for a hidden secret.
    package static let hidden = "hidden"

    /// Keywords whose values are secrets (libpq "Parameter Key Words"): `password`, and
    /// `sslpassword`, which unlocks the client's key. Compared case-insensitively.
    static let secretKeywords: Set<String> = ["password", "sslpassword"]

    /// `text` with every secret replaced by `hidden`, in both forms libpq takes (libpq §34.1.1):
    /// a URI's userinfo password and its `password=`/`sslpassword=` query parameters (keywords
    /// percent-decoded, as libpq decodes them), and `password=` in a `key=value` string
    /// (quoted or not). It errs towards hiding: whatever looks like a URI's userinfo loses
    /// everything after its first `:`; a `key=value` string that does not parse keeps nothing.
    package static func redacted(_ text: String) -> String {
        // A URI starts with a scheme (RFC 3986 §3.1); `://` inside a keyword's value does not count.
        if let scheme = text.range(of: "://"), !text[..<scheme.lowerBound].isEmpty,
           text[..<scheme.lowerBound].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) {
            return String(text[..<scheme.upperBound]) + redactedURIRest(text[scheme.upperBound...])
        }
        return redactedKeywordValues(text)
    }

    /// After `scheme://`: `[user[:password]@]hosts[/dbname][?key=value&…]`.
    private static func redactedURIRest(_ rest: Substring) -> String {
        let query = rest.firstIndex(of: "?")
        var head = String(rest[..<(query ?? rest.endIndex)])
        // A host never holds `@`: everything before the last one is userinfo (libpq wants a
        // literal `@` in a password percent-encoded; a careless one must not leak the rest).
        if let at = head.lastIndex(of: "@"), let colon = head[..<at].firstIndex(of: ":") {
            head = String(head[...colon]) + hidden + String(head[at...])
        }
        guard let query else { return head }
        let parameters = rest[rest.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false).map { parameter in
            let parts = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let keyword = PercentDecodedKeyword(parts[0]).text
            guard parts.count == 2, secretKeywords.contains(keyword.lowercased()) else { return String(parameter) }
            return "\(parts[0])=\(hidden)"
        }
        return head + "?" + parameters.joined(separator: "&")
    }

    /// `keyword = value …` with values bare or single-quoted (`\` escapes the next character).
    private static func redactedKeywordValues(_ text: String) -> String {
        var output = ""
        var index = text.startIndex
        func skipSpaces() {
            while index < text.endIndex, text[index].isWhitespace { output.append(text[index]); index = text.index(after: index) }
        }
        while true {
            skipSpaces()
            guard index < text.endIndex else { return output }
            let keywordStart = index
            while index < text.endIndex, text[index] != "=", !text[index].isWhitespace { index = text.index(after: index) }
            let keyword = text[keywordStart..<index]
            output += keyword
            skipSpaces()
            guard index < text.endIndex, text[index] == "=" else {
                // Not `keyword=value`: a bare database name is nothing secret; anything else
                // libpq refuses, and it is kept from view whole.
                return keyword == text.trimmingWhitespace() ? text : hidden
            }
            output.append("=")
            index = text.index(after: index)
            skipSpaces()
            let valueStart = index
            var quoted = false
            if index < text.endIndex, text[index] == "'" {
                quoted = true
                index = text.index(after: index)
                var closed = false
                while index < text.endIndex {
                    let character = text[index]
                    index = text.index(after: index)
                    if character == "\\" {
                        if index < text.endIndex { index = text.index(after: index) }
                    } else if character == "'" {
                        closed = true
                        break
                    }
                }
                guard closed else { return hidden }
            } else {
                while index < text.endIndex, !text[index].isWhitespace {
                    if text[index] == "\\", text.index(after: index) < text.endIndex { index = text.index(after: index) }
                    index = text.index(after: index)
                }
            }
            if secretKeywords.contains(keyword.lowercased()) {
                output += quoted ? "'\(hidden)'" : hidden
            } else {
                output += text[valueStart..<index]
            }
        }
    }
}

/// A URI query keyword as libpq reads it: percent-decoded (`pass%77ord` is `password`).
private struct PercentDecodedKeyword {
    var text: String

    init(_ raw: Substring) {
        let raw = Array(raw.utf8)
        var bytes: [UInt8] = []
        var index = 0
        while index < raw.count {
            if raw[index] == UInt8(ascii: "%"), index + 2 < raw.count,
               let value = UInt8(String(decoding: raw[(index + 1)...(index + 2)], as: UTF8.self), radix: 16) {
                bytes.append(value)
                index += 3
            } else {
                bytes.append(raw[index])
                index += 1
            }
        }
        text = String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> Substring {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map { index(after: $0) } ?? start
        return self[start..<end]
    }
}
