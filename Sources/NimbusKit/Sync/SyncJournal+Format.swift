import Foundation

/// The journal's bytes. A file is the magic `NMBSJRN1` and then entries, each
/// `length (u32 LE) · CRC-32 of the payload (u32 LE) · payload`; a payload is items, each
/// `kind (u8) · length (u32 LE) · JSON`. One entry is one commit: it is read whole or not at all,
/// and an entry cut short or damaged (a crash mid-append) fails its length or checksum and is
/// dropped with everything after it. Later items override earlier ones, record by record.
enum JournalFormat {
    static let magic = Array("NMBSJRN1".utf8)
    static let entryHeaderSize = 8
    static let itemHeaderSize = 5

    enum Kind: UInt8 {
        /// An outbox entry, new or changed (`OutboxEntry`).
        case put = 1
        /// A record's entry left the outbox (`RecordID`).
        case remove = 2
        /// `SyncState.Tokens`.
        case tokens = 3
        /// `SyncState.Notifications`.
        case notifications = 4
        /// The parked changes, whole (`[FailedChange]`).
        case failed = 5
        /// The next enqueue sequence (`Int64`), written by compaction; otherwise derived from puts.
        case sequence = 6
        /// `SyncState.ZoneChanges`, whole (pending and parked zone creates and deletes).
        case zones = 7
        /// `KnownDelta`: record names the server has, added to or removed from a zone's set.
        case known = 8
    }

    struct Item {
        var kind: Kind
        var json: Data
    }

    /// Appends an item to a payload.
    static func append(_ kind: Kind, _ json: Data, to payload: inout Data) {
        payload.append(kind.rawValue)
        appendUInt32(UInt32(json.count), to: &payload)
        payload.append(json)
    }

    /// A whole entry for a payload.
    static func entry(_ payload: Data) -> Data {
        var data = Data(capacity: entryHeaderSize + payload.count)
        appendUInt32(UInt32(payload.count), to: &data)
        appendUInt32(CRC32.checksum(payload), to: &data)
        data.append(payload)
        return data
    }

    /// The entries of a journal file after its magic, and the length of the prefix they fill:
    /// bytes past it are a torn or damaged tail.
    static func entries(in data: Data) -> (payloads: [Data], validLength: Int) {
        var payloads: [Data] = []
        var offset = data.startIndex + magic.count
        while data.endIndex - offset >= entryHeaderSize {
            let length = Int(readUInt32(data, at: offset))
            let checksum = readUInt32(data, at: offset + 4)
            let start = offset + entryHeaderSize
            guard length <= data.endIndex - start else { break }
            let payload = data[start..<start + length]
            guard CRC32.checksum(payload) == checksum else { break }
            payloads.append(Data(payload))
            offset = start + length
        }
        return (payloads, offset - data.startIndex)
    }

    /// The items of a payload whose checksum matched; an item that does not fit is a format error.
    static func items(in payload: Data) throws -> [Item] {
        var items: [Item] = []
        var offset = payload.startIndex
        while offset < payload.endIndex {
            guard payload.endIndex - offset >= itemHeaderSize, let kind = Kind(rawValue: payload[offset]) else {
                throw JournalFormatError()
            }
            let length = Int(readUInt32(payload, at: offset + 1))
            let start = offset + itemHeaderSize
            guard length <= payload.endIndex - start else { throw JournalFormatError() }
            items.append(Item(kind: kind, json: payload[start..<start + length]))
            offset = start + length
        }
        return items
    }

    static func appendUInt32(_ value: UInt32, to data: inout Data) {
        withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }

    static func readUInt32(_ data: Data, at offset: Int) -> UInt32 {
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(data[offset + index]) << (8 * UInt32(index)) }
        return value
    }
}

struct JournalFormatError: Error {}
