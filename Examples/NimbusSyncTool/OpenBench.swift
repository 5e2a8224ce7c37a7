import Foundation
import NimbusKit

/// `bench-e2e-open`: the CPU a first sync spends per record on decoding and opening its pages,
/// plain beside one encrypted field (issue 30), with no server and no network. It builds one page
/// of 400 records in the server's shape twice — `Event` with `title` a STRING, `SealedEvent` with
/// `title` sealed by this container's key — and decodes and opens each page (as `fetchChanges`
/// does, `Container.decodeAndOpenChanges`) until N records passed, plain and sealed alternating
/// for ROUNDS rounds. Timed by the thread's CPU clock (steady on a loaded machine). Prints the
/// median ns per record of each and their difference: the cost of one encrypted field.
enum OpenBench {
    static func run(_ arguments: [String], container: Container) throws {
        let count = arguments.first.flatMap(Int.init) ?? 100_000
        let rounds = arguments.count > 1 ? Int(arguments[1]) ?? 5 : 5
        if container.keyStore == nil { container.keyStore = MemoryKeyStore() }
        _ = try container.keyStore?.loadOrCreate()
        let zone = ZoneID("sealed")
        let plain = try page(zone: zone, sealedWith: nil)
        let sealed = try page(zone: zone, sealedWith: container)
        let pages = max(1, count / pageSize)
        var plainNs: [Double] = [], sealedNs: [Double] = []
        // BENCH_OPEN_ONLY=plain|sealed times one page only (for `perf record` of one path); the other prints 0.
        let only = ProcessInfo.processInfo.environment["BENCH_OPEN_ONLY"]
        for _ in 0..<rounds {
            plainNs.append(only == "sealed" ? 0 : try time(plain, pages: pages, zone: zone, container: container))
            sealedNs.append(only == "plain" ? 0 : try time(sealed, pages: pages, zone: zone, container: container))
        }
        let (p, s) = (median(plainNs), median(sealedNs))
        say("result e2e-open records=\(pages * pageSize) rounds=\(rounds) plain_ns_per_record=\(Int(p)) "
            + "sealed_ns_per_record=\(Int(s)) field_ns=\(Int(s - p)) plain_bytes=\(plain.count) sealed_bytes=\(sealed.count) "
            + "plain_all=\(plainNs.map { String(Int($0)) }.joined(separator: ",")) sealed_all=\(sealedNs.map { String(Int($0)) }.joined(separator: ","))")
    }

    static let pageSize = 400

    /// ns of thread CPU per record over `pages` decodes of `page`.
    private static func time(_ page: Data, pages: Int, zone: ZoneID, container: Container) throws -> Double {
        let start = threadCPU()
        var opened = 0
        for _ in 0..<pages {
            let result = try container.decodeAndOpenChanges(page, zone: zone)
            guard result.unreadable == 0 else { fail("a bench record did not open") }
            opened += result.opened
        }
        return (threadCPU() - start) / Double(opened)
    }

    private static func threadCPU() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) * 1e9 + Double(now.tv_nsec)
    }

    private static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

    /// A page as the server writes it (API.md's record dictionary), records like bench-e2e-modify's.
    private static func page(zone: ZoneID, sealedWith container: Container?) throws -> Data {
        var items: [String] = []
        for n in 0..<pageSize {
            let name = String(format: "r-%07d", n)
            let title: String
            if let container {
                var record = Record(recordType: "SealedEvent", id: RecordID(recordName: name, zoneID: zone))
                record.encryptedValues["title"] = .string("event number \(n)")
                guard case .encrypted(let value)? = try container.seal(record).fields["title"], let bytes = value.ciphertext else {
                    fail("sealing a bench record gave no ciphertext")
                }
                title = #"{"value":"\#(bytes.base64EncodedString())","type":"ENCRYPTED_BYTES"}"#
            } else {
                title = #"{"value":"event number \#(n)","type":"STRING"}"#
            }
            let ms = 1_795_000_000_000 + Int64(n) * 1000
            let stamp = #"{"timestamp":\#(ms),"userRecordName":"_0123456789abcdef0123456789abcdef","deviceID":"bench-device"}"#
            items.append(#"{"recordName":"\#(name)","recordType":"\#(container == nil ? "Event" : "SealedEvent")","#
                + #""recordChangeTag":"k\#(n)x","fields":{"title":\#(title),"appName":{"value":"Safari","type":"STRING"},"#
                + #""timestamp":{"value":\#(ms),"type":"TIMESTAMP"}},"created":\#(stamp),"modified":\#(stamp),"#
                + #""deleted":false,"zoneID":{"zoneName":"\#(zone.zoneName)"}}"#)
        }
        return Data((#"{"zoneID":{"zoneName":"\#(zone.zoneName)"},"records":["# + items.joined(separator: ",")
            + #"],"syncToken":"bench-token","moreComing":true}"#).utf8)
    }
}
