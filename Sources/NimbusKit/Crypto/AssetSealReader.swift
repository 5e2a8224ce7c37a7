import Foundation

/// The sealed form of a plaintext file (`AssetSeal`'s format) produced in order as it is read:
/// the 21-byte header, then each segment, sealed from the next 64 KiB of the file when the one
/// before has been taken. At most one sealed segment is held, whatever the file's size, so an
/// upload body (`SealedUpload`) and `AssetSeal.seal` (file to file) share it.
///
/// A read error of the file throws (`assetFileNotFound`), and the reader is then spent: it never
/// ends early as if the file had ended there (a cut body must fail its request, not be stored).
final class AssetSealReader {
    private let input: FileHandle
    private let fileKey: Data
    private let aad: Data
    /// Sealed bytes not yet taken, from `offset`.
    private var pending: Data
    private var offset = 0
    private var index: UInt32 = 0
    /// The last segment (the one with fewer than 64 KiB of plaintext) has been sealed.
    private var sealedLast = false
    private var failed = false
    private let file: URL

    init(file: URL, key: AccountKey, context: SealContext, salt: Data) throws {
        guard let input = try? FileHandle(forReadingFrom: file) else {
            throw NimbusError(.assetFileNotFound, reason: "The asset file \(file.path) cannot be read.")
        }
        self.input = input
        self.file = file
        let header = SealFormat.header(keyID: key.id) + salt
        fileKey = AssetSeal.fileKey(key, salt: salt, context: context)
        aad = header + context.associatedData(kind: UInt8(ascii: "A"))
        pending = header
    }

    deinit { try? input.close() }

    /// True once every sealed byte has been taken.
    var isAtEnd: Bool { sealedLast && offset == pending.count }

    /// Copies the next sealed bytes into `buffer` (as many as fit, at most what one segment has
    /// left); 0 once every byte was taken.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard !failed else { throw NimbusError(.assetFileNotFound, reason: "The asset file \(file.path) could not be read to the end.") }
        guard buffer.count > 0 else { return 0 }
        if offset == pending.count {
            if sealedLast { return 0 }
            try sealNextSegment()
        }
        let count = min(buffer.count, pending.count - offset)
        pending.withUnsafeBytes { bytes in
            guard let source = bytes.baseAddress, let target = buffer.baseAddress else { return }
            target.copyMemory(from: source + offset, byteCount: count)
        }
        offset += count
        return count
    }

    /// The next sealed piece as `Data` (the header, then one whole segment at a time); nil at the end.
    func next() throws -> Data? {
        if offset == pending.count {
            if sealedLast { return nil }
            try sealNextSegment()
        }
        let piece = offset == 0 ? pending : pending.subdata(in: offset..<pending.count)
        offset = pending.count
        return piece
    }

    private func sealNextSegment() throws {
        let chunk: Data
        do {
            chunk = try input.read(upToCount: AssetSeal.segmentSize) ?? Data()
        } catch {
            failed = true
            throw NimbusError(.assetFileNotFound, reason: "The asset file \(file.path) could not be read (\(error.localizedDescription)).")
        }
        let last = chunk.count < AssetSeal.segmentSize
        do {
            pending = try Primitives.seal(key: fileKey, nonce: AssetSeal.nonce(index, last: last), plaintext: chunk, aad: aad)
        } catch {
            failed = true
            throw error
        }
        offset = 0
        index += 1
        sealedLast = last
    }
}
