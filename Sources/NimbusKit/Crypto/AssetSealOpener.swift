import Foundation

/// Opens a sealed asset (`AssetSeal`'s format) as its bytes arrive, in pieces of any size: the
/// 21-byte header, then the segments, each opened as soon as it is whole. A piece of 65,552 bytes
/// (`AssetSeal.sealedSegmentSize`) is a full segment, never the last; what is left when the bytes
/// end is the last segment (a file cut at a segment boundary leaves nothing, which does not open).
/// The same plaintext comes out whatever the pieces' sizes.
///
/// A header that is not version 1, a key the ring lacks, or a segment that does not open (changed,
/// cut, reordered, spliced, moved to another record or field, bytes after the last segment) throws
/// `EncryptionError`; the opener is then spent and the caller discards what it wrote.
struct AssetSealOpener {
    private enum Stage {
        case header
        case segments(fileKey: Data, aad: Data)
        case done
    }

    private let context: SealContext
    /// The key of a key id (nil: this device has none).
    private let key: (UInt32) throws -> AccountKey?
    private var stage = Stage.header
    /// Bytes of the header or of a segment not yet whole; never more than one segment.
    private var pending = Data()
    private var index: UInt32 = 0

    init(context: SealContext, key: @escaping (UInt32) throws -> AccountKey?) {
        self.context = context
        self.key = key
    }

    /// Takes the next bytes of the sealed file; `plaintext` gets each segment opened by them, in order.
    mutating func receive(_ bytes: Data, plaintext: (Data) throws -> Void) throws {
        var rest = bytes[...]
        while !rest.isEmpty {
            switch stage {
            case .header:
                let take = min(AssetSeal.headerSize - pending.count, rest.count)
                pending.append(rest.prefix(take))
                rest = rest.dropFirst(take)
                if pending.count == AssetSeal.headerSize { try startSegments() }
            case .segments(let fileKey, let aad):
                let size = AssetSeal.sealedSegmentSize
                if pending.isEmpty, rest.count >= size {
                    // A whole segment inside these bytes: opened where it lies, no copy.
                    try plaintext(try open(rest.prefix(size), last: false, fileKey: fileKey, aad: aad))
                    rest = rest.dropFirst(size)
                } else {
                    let take = min(size - pending.count, rest.count)
                    pending.append(rest.prefix(take))
                    rest = rest.dropFirst(take)
                    if pending.count == size {
                        try plaintext(try open(pending, last: false, fileKey: fileKey, aad: aad))
                        pending.removeAll(keepingCapacity: true)
                    }
                }
            case .done:
                throw EncryptionError.decryptionFailed(context, "the asset has bytes after its last segment")
            }
        }
    }

    /// The bytes ended: opens what is left as the last segment.
    mutating func finish(plaintext: (Data) throws -> Void) throws {
        guard case .segments(let fileKey, let aad) = stage else {
            throw EncryptionError.decryptionFailed(context, "the asset is not a version-1 sealed file")
        }
        try plaintext(try open(pending, last: true, fileKey: fileKey, aad: aad))
        pending = Data()
        stage = .done
    }

    private mutating func startSegments() throws {
        guard let id = SealFormat.keyID(of: pending) else {
            stage = .done
            throw EncryptionError.decryptionFailed(context, "the asset is not a version-1 sealed file")
        }
        guard let found = try key(id) else {
            stage = .done
            throw EncryptionError.keyMissing(context, keyID: id)
        }
        let header = pending
        stage = .segments(fileKey: AssetSeal.fileKey(found, salt: header.suffix(16), context: context),
                          aad: header + context.associatedData(kind: UInt8(ascii: "A")))
        pending = Data(capacity: AssetSeal.sealedSegmentSize)
    }

    private mutating func open(_ segment: Data, last: Bool, fileKey: Data, aad: Data) throws -> Data {
        do {
            let opened = try Primitives.open(key: fileKey, nonce: AssetSeal.nonce(index, last: last), sealed: segment, aad: aad)
            index += 1
            return opened
        } catch {
            stage = .done
            let why = !(last && segment.isEmpty) ? "segment \(index) of the asset does not open (changed, reordered or cut)"
                : index == 0 ? "the asset has no segment after its header" : "the asset ends after segment \(index - 1), without its last segment (cut)"
            throw EncryptionError.decryptionFailed(context, why)
        }
    }
}
