import Foundation

/// The body stream of a sealed upload on Linux: an `InputStream` whose reads seal the file
/// (`AssetSealReader`) as libcurl asks for bytes, on the URLSession task's serial work queue.
///
/// swift-corelibs-foundation's body source (`_BodyStreamSource`) opens the stream, ends the body
/// as soon as `hasBytesAvailable` is false, and aborts the transfer on a negative read. So
/// `hasBytesAvailable` stays true until the last sealed byte was read (also after an error, so
/// that the failing read is made and aborts the request instead of ending the body early), and
/// a read or seal error reads -1 and is kept in `failure`.
///
/// Apple's URLSession cannot read an `InputStream` subclass (it schedules the body through
/// CFNetwork's private calls); there the body is `SealedBodyPump`'s bound pair.
final class SealingInputStream: InputStream {
    private let upload: SealedUpload
    private var reader: AssetSealReader?
    private var status: Stream.Status = .notOpen
    /// Why the body stopped before its end (the file could not be read or sealed).
    private(set) var failure: NimbusError?

    init(_ upload: SealedUpload) {
        self.upload = upload
        super.init(data: Data())
    }

    /// A new stream of the same body, from its first byte (libcurl re-sending the request).
    func restarted() -> SealingInputStream { SealingInputStream(upload) }

    override func open() {
        guard status == .notOpen else { return }
        do {
            reader = try upload.makeReader()
            status = .open
        } catch {
            fail(error)
        }
    }

    override func close() {
        reader = nil
        if status != .error { status = .closed }
    }

    override var streamStatus: Stream.Status { status }
    override var streamError: (any Error)? { failure }
    override var hasBytesAvailable: Bool { status == .open || status == .error }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        guard status == .open, let reader else { return status == .atEnd ? 0 : -1 }
        do {
            let count = try reader.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max(0, len)))
            if count == 0 && reader.isAtEnd {
                status = .atEnd
                self.reader = nil
            }
            return count
        } catch {
            fail(error)
            return -1
        }
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool {
        false
    }

    override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }
    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }
    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}

    private func fail(_ error: any Error) {
        failure = error as? NimbusError
            ?? NimbusError(.assetFileNotFound, reason: "The asset file \(upload.file.path) could not be sealed: \(error).")
        status = .error
        reader = nil
    }
}

#if !canImport(FoundationNetworking)
/// The body of a sealed upload on Apple platforms (swift-corelibs-foundation has no
/// `getBoundStreams`, so this is built on Apple platforms only): a bound stream pair whose output half a
/// thread of its own fills from `AssetSealReader` while URLSession drains the input half (a
/// write blocks while the pair's 64 KiB buffer is full). On an error the thread closes the
/// output early: the body is then shorter than its `Content-Length` and the request fails.
enum SealedBodyPump {
    static func start(_ upload: SealedUpload) -> InputStream? {
        var input: InputStream?
        var output: OutputStream?
        Stream.getBoundStreams(withBufferSize: AssetSeal.sealedSegmentSize, inputStream: &input, outputStream: &output)
        guard let input, let output else { return nil }
        let pump = Pump(output: output, upload: upload)
        Thread { pump.run() }.start()
        return input
    }

    // The output half is used by the pump's thread alone once it started (the caller keeps only the input half).
    private final class Pump: @unchecked Sendable {
        let output: OutputStream
        let upload: SealedUpload

        init(output: OutputStream, upload: SealedUpload) {
            self.output = output
            self.upload = upload
        }

        func run() {
            output.open()
            defer { output.close() }
            do {
                let reader = try upload.makeReader()
                while let piece = try reader.next() {
                    guard write(piece) else { return }  // the reader closed its half (the request ended)
                }
            } catch {
                return  // the body ends short of its Content-Length: the request fails
            }
        }

        private func write(_ piece: Data) -> Bool {
            piece.withUnsafeBytes { raw in
                guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return true }
                var written = 0
                while written < raw.count {
                    let count = output.write(base + written, maxLength: raw.count - written)
                    if count <= 0 { return false }
                    written += count
                }
                return true
            }
        }
    }
}
#endif
