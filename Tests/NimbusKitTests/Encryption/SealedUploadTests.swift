import Foundation
import Testing
@testable import NimbusKit

/// Encrypted assets sealed as the upload's body is sent (`SealedUpload`), against the real server
/// through the upload relay process (Tests/integration/upload-relay.py): no sealed temporary file
/// is ever written, a cut upload is sent again from its first byte with a fresh body and lands
/// whole, and the body's bytes are those `AssetSeal.seal` writes to a file.
@Suite("Sealed uploads, streamed")
struct SealedUploadTests {
    /// A size of its own (3 MiB + 17), so a sealed file of it is recognised among other tests' files.
    static let plainSize = (3 << 20) + 17
    static let sealedSize = Int(AssetSeal.sealedSize(ofPlaintext: Int64(plainSize)))

    static func bytes(_ count: Int) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }) }

    /// A device of its own user with the key and `Photo.image` declared encrypted, through the relay.
    static func container(_ server: TestServer, relay: UploadRelay, user: String, ring: KeyRing) throws -> Container {
        let token = try server.device(user: user, device: "mac")
        let container = server.container(token: token, url: relay.url, cache: temporaryDirectory("assets"))
        container.keyStore = MemoryKeyStore(ring)
        container.encryptedAssetFields = ["Photo": ["image"]]
        return container
    }

    /// Files in the temporary directory of exactly `size` bytes (a sealed temporary of the photo).
    static func temporaries(ofSize size: Int) -> Set<URL> {
        let files = (try? FileManager.default.contentsOfDirectory(at: FileManager.default.temporaryDirectory,
                                                                   includingPropertiesForKeys: [.fileSizeKey])) ?? []
        return Set(files.filter { (try? $0.resourceValues(forKeys: [.fileSizeKey]).fileSize) == size })
    }

    /// The photo downloaded and opened by another device with the key, and the bytes the server holds.
    static func readBack(_ server: TestServer, user: String, ring: KeyRing, id: RecordID) async throws -> (opened: Data, stored: Data) {
        let reader = server.container(token: try server.device(user: user, device: "phone"), cache: temporaryDirectory("assets"))
        reader.keyStore = MemoryKeyStore(ring)
        reader.encryptedAssetFields = ["Photo": ["image"]]
        let fetched = try await reader.privateDatabase.record(for: id)
        let asset = try #require(fetched["image"]?.assetValue)
        let opened = try Data(contentsOf: try await reader.privateDatabase.downloadAsset(asset))
        var unmarked = asset
        unmarked.sealContext = nil
        unmarked.fileURL = nil
        let stored = try Data(contentsOf: try await reader.privateDatabase.downloadAsset(unmarked))
        return (opened, stored)
    }

    @Test func aStalledSealedUploadHasNoSealedFileOnDiskAndLandsWhole() async throws {
        let server = try TestServer.start(["--body-timeout-seconds", "2"])
        defer { server.stop() }
        let relay = try UploadRelay(mode: "stall", fraction: 0.3, upstreamPort: server.port)
        defer { relay.stop() }
        let ring = KeyRing([AccountKey.generate()])
        let mac = try Self.container(server, relay: relay, user: "stream-stall", ring: ring)
        let folder = temporaryDirectory("sealed-upload")
        defer { try? FileManager.default.removeItem(at: folder) }
        let photo = folder.appendingPathComponent("photo.jpg")
        let plain = Self.bytes(Self.plainSize)
        try plain.write(to: photo)
        var record = Record(recordType: "Photo", id: RecordID(recordName: "stalled"))
        record["image"] = .asset(Asset(fileURL: photo))

        let before = Self.temporaries(ofSize: Self.sealedSize)
        let save = Task { try await mac.privateDatabase.save(record) }
        // While the relay holds the body (until the server's 2 s body timeout answers 408), no
        // file of the sealed size exists: the body is sealed as it is sent.
        #expect(try await eventually(60) { relay.counts.triggered == 1 }, "the relay never held the upload: \(relay.counts)")
        #expect(Self.temporaries(ofSize: Self.sealedSize).subtracting(before).isEmpty, "a sealed temporary file was written")
        _ = try await save.value
        #expect(Self.temporaries(ofSize: Self.sealedSize).subtracting(before).isEmpty)
        #expect(relay.counts.uploads >= 2 && relay.chunkedUploads >= 2, "not sent again as a streamed body: \(relay.counts)")

        let (opened, stored) = try await Self.readBack(server, user: "stream-stall", ring: ring, id: record.id)
        #expect(opened == plain)
        #expect(stored.count == Self.sealedSize && stored != plain && stored.first == 1)
    }

    @Test func aCutSealedUploadIsSentAgainFromItsFirstByteAndLandsWhole() async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        let relay = try UploadRelay(mode: "cut", fraction: 0.3, upstreamPort: server.port)
        defer { relay.stop() }
        let ring = KeyRing([AccountKey.generate()])
        let mac = try Self.container(server, relay: relay, user: "stream-cut", ring: ring)
        let folder = temporaryDirectory("sealed-upload")
        defer { try? FileManager.default.removeItem(at: folder) }
        let photo = folder.appendingPathComponent("photo.jpg")
        let plain = Self.bytes(Self.plainSize + 1)
        try plain.write(to: photo)
        var record = Record(recordType: "Photo", id: RecordID(recordName: "cut"))
        record["image"] = .asset(Asset(fileURL: photo))

        let saved = try await mac.privateDatabase.save(record)
        #expect(relay.counts.triggered == 1, "the relay never cut the upload: \(relay.counts)")
        // Both attempts were streamed sealed bodies: the second from its first byte (else it would not open).
        #expect(relay.counts.uploads >= 2 && relay.chunkedUploads >= 2, "not sent again as a streamed body: \(relay.counts)")
        let asset = try #require(saved["image"]?.assetValue)
        #expect(asset.size == AssetSeal.sealedSize(ofPlaintext: Int64(plain.count)))

        let (opened, stored) = try await Self.readBack(server, user: "stream-cut", ring: ring, id: record.id)
        #expect(opened == plain)
        #expect(stored.count == Int(AssetSeal.sealedSize(ofPlaintext: Int64(plain.count))) && stored != plain)
        #expect(Checksum.of(stored) == asset.fileChecksum)
    }

    @Test(arguments: [0, 1, 65_535, 65_536, 65_537, 200_003])
    func theStreamReadsTheBytesASealedFileHas(size: Int) throws {
        let folder = temporaryDirectory("sealed-stream")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (file, sealed) = (folder.appendingPathComponent("plain"), folder.appendingPathComponent("sealed"))
        try Self.bytes(size).write(to: file)
        let key = AccountKey.generate()
        let context = SealContext(container: "c", zone: "z", recordType: "Photo", recordName: "p", field: "image")
        let salt = Primitives.random(16)
        try AssetSeal.seal(file, to: sealed, key: key, context: context, salt: salt)
        let upload = SealedUpload(file: file, key: key, context: context, salt: salt,
                                  sealedSize: AssetSeal.sealedSize(ofPlaintext: Int64(size)))
        // Read in odd pieces, as libcurl asks (its buffer is not a segment's size).
        let stream = SealingInputStream(upload)
        #expect(stream.streamStatus == .notOpen)
        stream.open()
        var body = Data()
        var buffer = [UInt8](repeating: 0, count: 40_000)
        while stream.hasBytesAvailable {
            let count = stream.read(&buffer, maxLength: buffer.count)
            #expect(count >= 0)
            if count <= 0 { break }
            body.append(contentsOf: buffer[..<count])
        }
        stream.close()
        #expect(body == (try Data(contentsOf: sealed)))
        #expect(Int64(body.count) == upload.sealedSize)
    }

    @Test func aFileThatCannotBeReadFailsTheStreamInsteadOfEndingIt() throws {
        let upload = SealedUpload(file: URL(fileURLWithPath: "/nonexistent/photo.jpg"), key: AccountKey.generate(),
                                  context: SealContext(container: "c", zone: "z", recordType: "Photo", recordName: "p", field: "image"),
                                  salt: Primitives.random(16), sealedSize: 100)
        let stream = SealingInputStream(upload)
        stream.open()
        // Still "has bytes": the body source must make the read that fails, not end the body there.
        #expect(stream.hasBytesAvailable)
        var buffer = [UInt8](repeating: 0, count: 100)
        #expect(stream.read(&buffer, maxLength: buffer.count) == -1)
        #expect(stream.failure?.code == .assetFileNotFound)
    }
}
