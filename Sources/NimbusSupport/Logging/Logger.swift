import Foundation

/// A line-per-event logger: `level subsystem: key=value ... message`, or one JSON object per line.
///
/// Lines go to standard error unbuffered (scripts wait for the `listening on` line even when the
/// stream is redirected to a file). Secrets are never passed to it.
package struct Logger: Sendable {
    package enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, notice, warning, error

        package init?(name: String) {
            guard let level = Level.allCases.first(where: { "\($0)" == name.lowercased() }) else { return nil }
            self = level
        }

        package static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    package enum Format: String, Sendable { case text, json }

    package let subsystem: String

    package init(subsystem: String) {
        self.subsystem = subsystem
    }

    /// Sets the process-wide threshold and format (once at start-up).
    package static func configure(level: Level, format: Format) {
        sink.withLock { $0 = Sink(level: level, format: format) }
    }

    package static var threshold: Level { sink.withLock { $0.level } }

    package func debug(_ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, any Sendable> = [:]) {
        log(.debug, message(), metadata)
    }

    package func info(_ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, any Sendable> = [:]) {
        log(.info, message(), metadata)
    }

    package func notice(_ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, any Sendable> = [:]) {
        log(.notice, message(), metadata)
    }

    package func warning(_ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, any Sendable> = [:]) {
        log(.warning, message(), metadata)
    }

    package func error(_ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, any Sendable> = [:]) {
        log(.error, message(), metadata)
    }

    package func log(_ level: Level, _ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, any Sendable> = [:]) {
        let current = Logger.sink.withLock { $0 }
        guard level >= current.level else { return }
        let line: String
        switch current.format {
        case .text:
            var text = "\(level) \(subsystem):"
            for (key, value) in metadata { text += " \(key)=\(Logger.quoteIfNeeded("\(value)"))" }
            text += " \(message())\n"
            line = text
        case .json:
            var object: JSONObject = ["level": .string("\(level)"), "subsystem": .string(subsystem), "message": .string(message()),
                                      "time": .string(Logger.timestamp())]
            for (key, value) in metadata { object[key] = .string("\(value)") }
            line = String(decoding: JSONValue.object(object).serialized(sortedKeys: true), as: UTF8.self) + "\n"
        }
        Logger.write(line)
    }

    private struct Sink: Sendable {
        var level: Level
        var format: Format
    }

    private static let sink = Lock(Sink(level: .info, format: .text))
    private static let writeLock = Lock(())

    private static func write(_ line: String) {
        writeLock.withLock { _ in
            var bytes = Array(line.utf8)
            bytes.withUnsafeMutableBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Glibc.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return
                    }
                    offset += written
                }
            }
        }
    }

    private static func quoteIfNeeded(_ value: String) -> String {
        value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) ? "\"\(value.replacingOccurrences(of: "\"", with: "\\\""))\"" : value
    }

    private static func timestamp() -> String {
        Date().formatted(.iso8601)
    }
}
