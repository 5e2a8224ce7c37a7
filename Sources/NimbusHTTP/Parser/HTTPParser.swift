/// A push parser for HTTP/1.x requests (RFC 9112), in the discipline of llhttp and NIO: the caller
/// hands it whatever bytes arrived and gets one event back, and the events are the same whether the
/// bytes arrive whole or one at a time, including which error is reported.
///
/// How results stay identical under any split: a line is judged only once its LF has arrived, and
/// before that only against its size limit, using the fewest bytes the line can still end up with
/// (the bytes so far, less a final CR that may be the start of its CRLF). Body bytes are returned
/// as ranges of the caller's buffer, never copied; a line that spans two calls is the one thing kept.
package struct HTTPParser {
    package struct Limits: Sendable, Hashable {
        /// A longer request line is answered with 414.
        package var maxRequestLineBytes: Int = 8192
        /// A longer header or trailer line (name, colon and value, without CRLF) is answered with 431.
        package var maxHeaderLineBytes: Int = 8192
        /// All header and trailer lines together, each counted with its CRLF, without the request
        /// line and the empty line ending the section; more is answered with 431.
        package var maxHeaderBytes: Int = 65536
        /// More header and trailer fields together are answered with 431.
        package var maxHeaderCount: Int = 100
        /// A longer body (Content-Length, or the decoded chunked total) is answered with 413.
        package var maxBodyBytes: Int = 8 << 20

        package init() {}
    }

    package enum Event: Sendable, Hashable {
        /// The request line and header section are complete.
        case head(HTTPRequestHead)
        /// Decoded body bytes: indices into the buffer passed to this `parse` call (zero-copy).
        case body(Range<Int>)
        /// The request is complete; the parser is ready for the next, pipelined one.
        case messageEnd
        /// Every byte was consumed; call again when more arrive.
        case needMore
        /// The request is malformed or over a limit. Terminal: every later call returns it again.
        case error(HTTPParseError)
    }

    /// A chunk-size line (size and extensions, without CRLF) this long or longer is rejected with 400.
    /// Extensions are ignored, so a bound this generous costs nothing legitimate (RFC 9112 §7.1.1).
    static let maxChunkSizeLineBytes = 4096
    /// More empty lines than this before a request line are rejected with 400, so a stream of CRLFs
    /// cannot keep a connection busy forever (RFC 9112 §2.2 asks to ignore "at least one").
    static let maxLeadingEmptyLines = 8

    enum State {
        case requestLine
        case headerLine
        /// `.head` was returned; the next call checks the body limit and starts the body.
        case bodyStart
        case fixedBody(remaining: Int)
        case chunkSizeLine
        case chunkData(remaining: Int)
        case chunkDataCR
        case chunkDataLF
        case trailerLine
        case failed(HTTPParseError)
    }

    let limits: Limits
    var state: State = .requestLine
    /// The bytes of a line whose LF has not arrived yet, kept across calls. Empty on the fast path.
    var partialLine: [UInt8] = []
    /// The head being assembled from the request line and header lines.
    var head = HeadAccumulator()
    var framing: BodyFraming = .none
    /// Empty lines seen before the current request line.
    var leadingEmptyLines = 0
    /// Header and trailer lines of the current message so far, and their bytes with CRLF.
    var fieldCount = 0
    var fieldBytes = 0
    /// Decoded bytes of the current chunked body so far.
    var chunkedBodyBytes = 0

    /// The body limit for the message whose head was just returned. The caller may change it after
    /// a `.head` event and before feeding body bytes (e.g. a streaming upload route allows more);
    /// it returns to `Limits.maxBodyBytes` when the message ends.
    package var maxBodyBytes: Int

    /// Whether the parser is between requests, with no byte of a next request consumed: a
    /// connection closed now loses nothing, and an idle timeout needs no 408.
    package var isIdle: Bool {
        guard case .requestLine = state else { return false }
        return partialLine.isEmpty && leadingEmptyLines == 0
    }

    package init(limits: Limits = .init()) {
        self.limits = limits
        self.maxBodyBytes = limits.maxBodyBytes
    }

    /// Parses from the start of `buffer`; returns how many bytes were consumed and one event.
    ///
    /// Loop, feeding the unconsumed rest again, until the event is `.needMore` (every byte consumed;
    /// a partial line is kept inside) or `.error`. After `.head` call again even with an empty buffer:
    /// a request without body yields `.messageEnd` without needing bytes.
    package mutating func parse(_ buffer: UnsafeRawBufferPointer) -> (consumed: Int, event: Event) {
        if case .failed(let error) = state { return (0, .error(error)) }
        var offset = 0
        do throws(HTTPParseError) {
            while true {
                if let event = try step(buffer, offset: &offset) { return (offset, event) }
            }
        } catch {
            state = .failed(error)
            return (offset, .error(error))
        }
    }

    /// Advances by one state; returns an event when one is due, nil to go on.
    private mutating func step(_ buffer: UnsafeRawBufferPointer, offset: inout Int) throws(HTTPParseError) -> Event? {
        switch state {
        case .requestLine, .headerLine, .chunkSizeLine, .trailerLine:
            return try nextLine(buffer, offset: &offset)
        case .bodyStart:
            return try startBody()
        case .fixedBody(let remaining):
            if remaining == 0 {
                endMessage()
                return .messageEnd
            }
            let count = min(remaining, buffer.count - offset)
            guard count > 0 else { return .needMore }
            state = .fixedBody(remaining: remaining - count)
            offset += count
            return .body(offset - count..<offset)
        case .chunkData(let remaining):
            let count = min(remaining, buffer.count - offset)
            guard count > 0 else { return .needMore }
            state = count == remaining ? .chunkDataCR : .chunkData(remaining: remaining - count)
            offset += count
            return .body(offset - count..<offset)
        case .chunkDataCR, .chunkDataLF:
            guard offset < buffer.count else { return .needMore }
            let expectsCR = if case .chunkDataCR = state { true } else { false }
            // RFC 9112 §7.1: chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF.
            guard buffer[offset] == (expectsCR ? .cr : .lf) else {
                throw .badRequest("The chunk data is not followed by CRLF.")
            }
            offset += 1
            state = expectsCR ? .chunkDataLF : .chunkSizeLine
            return nil
        case .failed(let error):
            return .error(error)
        }
    }

    /// Takes the next complete line from `buffer` (joined with a kept partial line) and handles it,
    /// or keeps the rest as a partial line after checking that it is not already over its limit.
    private mutating func nextLine(_ buffer: UnsafeRawBufferPointer, offset: inout Int) throws(HTTPParseError) -> Event? {
        let start = offset
        guard let lf = buffer.firstIndex(of: .lf, from: start) else {
            let pending = partialLine.count + buffer.count - start
            let last = start < buffer.count ? buffer[buffer.count - 1] : partialLine.last
            // The fewest content bytes this line can end with: a final CR may begin its CRLF.
            let leastContent = last == .cr ? pending - 1 : pending
            // RFC 9112 §3 (414), RFC 6585 §5 (431), RFC 9112 §7.1.1 (bounded chunk extensions).
            let (threshold, limit) = lineLimit()
            if leastContent >= threshold { throw limit.error(limits) }
            partialLine.append(contentsOf: buffer.slice(start..<buffer.count))
            offset = buffer.count
            return .needMore
        }
        offset = lf + 1
        if partialLine.isEmpty { return try handleLine(buffer.slice(start..<lf)) }
        partialLine.append(contentsOf: buffer.slice(start..<lf))
        // Swapped out so the line can be read while `self` is mutated; swapped back to keep capacity.
        var line: [UInt8] = []
        swap(&line, &partialLine)
        defer {
            // A rare long line's storage is not kept for the life of the connection.
            if line.capacity > 4096 { line = [] } else { line.removeAll(keepingCapacity: true) }
            swap(&line, &partialLine)
        }
        // `withUnsafeBytes` only rethrows untyped errors, so the outcome comes out as a Result.
        let outcome = line.withUnsafeBytes { bytes -> Result<Event?, HTTPParseError> in
            do throws(HTTPParseError) { return .success(try handleLine(bytes)) } catch { return .failure(error) }
        }
        return try outcome.get()
    }

    /// Handles a line given with everything before its LF.
    private mutating func handleLine(_ raw: UnsafeRawBufferPointer) throws(HTTPParseError) -> Event? {
        let endsWithCR = raw.last == .cr
        let line = endsWithCR ? raw.slice(0..<raw.count - 1) : raw
        // Size first, as it is the one check that can fire before the LF arrives: RFC 9112 §3 (414),
        // RFC 6585 §5 (431), RFC 9112 §7.1.1 (bounded chunk extensions).
        let (threshold, limit) = lineLimit()
        if line.count >= threshold { throw limit.error(limits) }
        // RFC 9112 §2.2: a bare LF is a line terminator we reject rather than tolerate.
        guard endsWithCR else { throw .badRequest("A line ends with a bare LF instead of CRLF.") }
        switch state {
        case .requestLine: return try handleRequestLine(line)
        case .headerLine: return try handleFieldLine(line, trailer: false)
        case .chunkSizeLine: return try handleChunkSizeLine(line)
        case .trailerLine: return try handleFieldLine(line, trailer: true)
        default: preconditionFailure("handleLine called outside a line state")
        }
    }

    /// Which limit a line is measured against; the error is built only when it is breached.
    enum LineLimit {
        case requestLine, chunkSizeLine, fieldLine(trailer: Bool), fieldSection

        func error(_ limits: Limits) -> HTTPParseError {
            switch self {
            case .requestLine: .requestLineTooLong(limit: limits.maxRequestLineBytes)
            case .chunkSizeLine: .chunkSizeLineTooLong(limit: HTTPParser.maxChunkSizeLineBytes)
            case .fieldLine(let trailer): .fieldLineTooLong(limit: limits.maxHeaderLineBytes, trailer: trailer)
            case .fieldSection: .fieldSectionTooLarge(limit: limits.maxHeaderBytes)
            }
        }
    }

    /// The content size (without CRLF) at which the current line is rejected, and by which limit.
    /// For a field line it is the nearer of the line limit and what is left of the section limit,
    /// so the limit named is the one a byte-at-a-time feed reaches first.
    private func lineLimit() -> (threshold: Int, limit: LineLimit) {
        switch state {
        case .requestLine:
            return (limits.maxRequestLineBytes.plusOne, .requestLine)
        case .chunkSizeLine:
            return (Self.maxChunkSizeLineBytes + 1, .chunkSizeLine)
        default:
            let lineThreshold = limits.maxHeaderLineBytes.plusOne
            // A field line of n content bytes adds n + 2; the empty line ending the section adds nothing.
            let sectionThreshold = max(1, limits.maxHeaderBytes - fieldBytes - 1)
            if lineThreshold <= sectionThreshold {
                let trailer = if case .trailerLine = state { true } else { false }
                return (lineThreshold, .fieldLine(trailer: trailer))
            }
            return (sectionThreshold, .fieldSection)
        }
    }

    /// Decides, on the first call after `.head`, how the body starts; the caller may have raised
    /// `maxBodyBytes` in between.
    private mutating func startBody() throws(HTTPParseError) -> Event? {
        switch framing {
        case .none:
            endMessage()
            return .messageEnd
        case .length(let length):
            // RFC 9110 §15.5.14: 413 when the content is larger than the server will process.
            if length > maxBodyBytes { throw .bodyTooLarge(length: length, limit: maxBodyBytes) }
            state = .fixedBody(remaining: length)
            return nil
        case .chunked:
            state = .chunkSizeLine
            return nil
        }
    }

    /// Resets everything that belongs to one message, ready for the next request.
    mutating func endMessage() {
        state = .requestLine
        head = HeadAccumulator()
        framing = .none
        leadingEmptyLines = 0
        fieldCount = 0
        fieldBytes = 0
        chunkedBodyBytes = 0
        maxBodyBytes = limits.maxBodyBytes
    }
}

extension Int {
    /// One more, saturating: a limit of `Int.max` means "no limit", not a trap.
    fileprivate var plusOne: Int { self == .max ? self : self + 1 }
}
