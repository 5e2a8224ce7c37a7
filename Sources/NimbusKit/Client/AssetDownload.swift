import Foundation

/// An asset's body as it arrives, in one pass (the `AnswerCollector` feeds it each chunk): counted
/// and hashed (SHA-256) on the way and written to a partial file beside the cache's files — the
/// bytes themselves, or for a sealed asset only the plaintext its `AssetSealOpener` opens from
/// them (the sealed bytes are never written anywhere). `finish` checks the checksum and size and
/// moves the file into place; every other end removes it, so no partial file is left.
///
/// Which error wins: bytes that do not match the checksum or size are `assetCorrupted`, even when
/// they also failed to open (hashing goes on to the end after a segment failed); bytes that match
/// but do not open are `decryptionFailed` (or `encryptionKeyMissing`).
final class AssetDownload: @unchecked Sendable {
    // @unchecked: `write` runs on the session's delegate queue under the collector's lock, one
    // chunk at a time; `finish` and `discard` run after the task completed (no more chunks).
    private let partial: URL
    private var handle: FileHandle?
    private var hasher = Checksum()
    private var received: Int64 = 0
    private var opener: AssetSealOpener?
    /// Why the sealed bytes did not open; reported only when they match their checksum.
    private var openFailure: (any Error)?

    /// A download into a new partial file of the cache (`.partial-<pid>-<uuid>`: a killed process's
    /// leftover is recognised by its pid); `opener` opens a sealed asset's bytes.
    init(cache: AssetCache, opener: AssetSealOpener?) throws {
        let directory = cache.directory
        partial = cache.newPartialFile()
        self.opener = opener
        // A sealed asset's partial file holds plaintext: the owner's alone, as `AssetSeal.open` writes it.
        let attributes: [FileAttributeKey: Any]? = opener == nil ? nil : [.posixPermissions: 0o600]
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: partial.path, contents: nil, attributes: attributes),
              let handle = try? FileHandle(forWritingTo: partial) else {
            throw NimbusError(.networkFailure, reason: "Cannot write the download to \(partial.path).")
        }
        self.handle = handle
    }

    /// Takes the next chunk of the body; throws only when the file cannot be written (the
    /// collector then cancels the task).
    func write(_ data: Data) throws {
        received += Int64(data.count)
        hasher.update(data)
        guard openFailure == nil, let handle else { return }
        guard opener != nil else {
            try handle.write(contentsOf: data)
            return
        }
        var writeFailure: (any Error)?
        do {
            // Mutated in place (optional chaining): a copy would copy its pending segment each chunk.
            try opener?.receive(data) { plaintext in
                do { try handle.write(contentsOf: plaintext) } catch { writeFailure = error; throw error }
            }
        } catch {
            if let writeFailure { throw writeFailure }
            failedToOpen(error)  // the bytes, or the key store read for their key id
        }
    }

    /// The file in place at `target`, once the body ended: its bytes matched `checksum` (and
    /// `size`, when given) and, sealed, every segment opened. Any failure removes the file.
    func finish(checksum: String, size: Int64?, as target: URL) throws -> URL {
        if openFailure == nil, opener != nil, let handle {
            var writeFailure: (any Error)?
            do {
                try opener?.finish { plaintext in
                    do { try handle.write(contentsOf: plaintext) } catch { writeFailure = error; throw error }
                }
            } catch {
                if let writeFailure {
                    discard()
                    throw NimbusError(.networkFailure, reason: "The download could not be written to \(partial.path): \(writeFailure.localizedDescription)")
                }
                failedToOpen(error)
            }
        }
        let actual = hasher.finalizeBase64()
        guard actual == checksum, size == nil || size == received else {
            discard()
            throw NimbusError(.assetCorrupted, reason: "The downloaded asset's bytes (\(received) bytes, SHA-256 \(actual)) "
                + "do not match its checksum \(checksum); nothing was cached. Download it again.")
        }
        if let openFailure {
            discard()
            throw (openFailure as? EncryptionError)?.nimbusError ?? openFailure
        }
        do {
            try handle?.close()
        } catch {
            discard()
            throw NimbusError(.networkFailure, reason: "The download could not be written to \(partial.path): \(error.localizedDescription)")
        }
        handle = nil
        if FileManager.default.fileExists(atPath: target.path) {
            discard()  // another download of the same bytes won
            return target
        }
        do {
            try FileManager.default.moveItem(at: partial, to: target)
        } catch where FileManager.default.fileExists(atPath: target.path) {
            discard()  // another download of the same bytes won
        }
        return target
    }

    /// Closes and removes the partial file (a failed, cancelled or refused download).
    func discard() {
        try? handle?.close()
        handle = nil
        try? FileManager.default.removeItem(at: partial)
    }

    /// A sealed body that does not open: nothing more is opened or written (the partial
    /// plaintext goes at once), but hashing goes on, so that a corrupted body is still told apart.
    private func failedToOpen(_ error: any Error) {
        openFailure = error
        opener = nil
        discard()
    }
}
