import Foundation
import NimbusHTTP
import Testing

/// Downloads with `Range` (RFC 9110 §14) and `If-None-Match`, in process (was scenario 53; HEAD
/// on the wire, the 304's framing and a download cut on a real socket stay there): one range is 206
/// with `Content-Range` and exactly those bytes, across the 256 KiB chunks and the 1 MiB read
/// batches; suffix ranges; ends past the size clamped; unsatisfiable ranges 416 with
/// `Content-Range: bytes */N`; several ranges or a syntax we do not read get the whole body; a
/// download whose client left stops at the first write that finds it gone.
@Suite struct AssetRangeTests {
    static let size = 3_000_000
    static let chunk = 262_144

    struct Assets {
        let fixture: APIFixture
        let token: String
        let big: [UInt8], one: [UInt8]
        let bigURL: String, oneURL: String, emptyURL: String
        let bigTag: String, oneTag: String
    }

    /// A download: its answer and the length its head announced.
    struct Download {
        var answer: Answer
        var length: Int?
    }

    private static func with(_ body: (Assets) async throws -> Void) async throws {
        try await APIFixture.with { fixture in
            let token = try await fixture.token()
            let big = randomBytes(size), one = randomBytes(1)
            var operations: [String] = []
            for (name, bytes) in [("big", big), ("one", one), ("empty", [])] {
                let uploaded = await fixture.upload(bytes, token: token)
                #expect(uploaded.checksum == checksum(bytes) && uploaded.size == Int64(bytes.count), "\(name): \(uploaded.answer)")
                operations.append(#"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Blob","fields":{"data":\#(uploaded.field)}}}"#)
            }
            let saved = await fixture.database("records/modify", token: token, #"{"operations":[\#(operations.joined(separator: ","))]}"#)
            #expect(saved.itemCodes == ["ok", "ok", "ok"], "\(saved)")
            func url(_ name: String) -> String { saved.asset(name)?["downloadURL"]?.stringValue ?? "" }
            try await body(Assets(fixture: fixture, token: token, big: big, one: one, bigURL: url("big"), oneURL: url("one"), emptyURL: url("empty"),
                                  bigTag: "\"\(checksum(big))\"", oneTag: "\"\(checksum(one))\""))
        }
    }

    private static func get(_ assets: Assets, _ url: String, _ headers: HTTPHeaders, method: String = "GET") async -> Download {
        let sink = assets.fixture.start(method, APIFixture.path(of: url), token: assets.token, headers: headers)
        let answer = await sink.answer()
        return Download(answer: answer, length: sink.contentLength)
    }

    /// 206 with bytes `first...last` of `file`.
    private static func expectRange(_ assets: Assets, _ url: String, _ file: [UInt8], _ spec: String, _ first: Int, _ last: Int,
                                    sourceLocation: SourceLocation = #_sourceLocation) async {
        let download = await get(assets, url, ["Range": spec])
        let answer = download.answer
        #expect(answer.status == 206, "Range: \(spec): \(answer.status)", sourceLocation: sourceLocation)
        #expect(answer.header("Content-Range") == "bytes \(first)-\(last)/\(file.count)", "Range: \(spec): \(answer.headers)", sourceLocation: sourceLocation)
        #expect(download.length == last - first + 1 && answer.header("ETag") != nil, "Range: \(spec)", sourceLocation: sourceLocation)
        #expect(answer.body == Array(file[first...last]), "Range: \(spec): \(answer.body.count) bytes, not bytes \(first)-\(last)",
                sourceLocation: sourceLocation)
    }

    @Test func oneRangeIsPartialContentWithExactlyThoseBytes() async throws {
        try await Self.with { assets in
            let n = Self.size, k = Self.chunk
            let cases: [(String, Int, Int)] = [
                ("bytes=0-0", 0, 0), ("bytes=-1", n - 1, n - 1), ("bytes=\(n - 1)-", n - 1, n - 1), ("bytes=\(n - 1)-\(n - 1)", n - 1, n - 1),
                ("bytes=0-", 0, n - 1), ("bytes=100-99999999", 100, n - 1), ("bytes=-\(n)", 0, n - 1), ("bytes=-\(n + 5000)", 0, n - 1),
                ("bytes=-1000", n - 1000, n - 1),
                // At and across the chunk boundaries and the read batches of 4 chunks.
                ("bytes=0-\(k - 1)", 0, k - 1), ("bytes=\(k - 1)-\(k)", k - 1, k), ("bytes=\(k)-\(k)", k, k), ("bytes=\(k)-\(2 * k - 1)", k, 2 * k - 1),
                ("bytes=\(k - 10)-\(2 * k + 10)", k - 10, 2 * k + 10), ("bytes=\(4 * k - 3)-\(4 * k + 2)", 4 * k - 3, 4 * k + 2),
                ("bytes=\(5 * k + 7)-\(11 * k + 3)", 5 * k + 7, 11 * k + 3), ("bytes=\(11 * k)-", 11 * k, n - 1), ("bytes=1000-\(n - 1001)", 1000, n - 1001),
            ]
            for (spec, first, last) in cases { await Self.expectRange(assets, assets.bigURL, assets.big, spec, first, last) }
            for spec in ["bytes=0-0", "bytes=-1", "bytes=0-5"] { await Self.expectRange(assets, assets.oneURL, assets.one, spec, 0, 0) }
        }
    }

    @Test func anUnsatisfiableRangeIs416WithTheSize() async throws {
        try await Self.with { assets in
            let n = Self.size
            let cases = [(assets.bigURL, n, "bytes=-0"), (assets.bigURL, n, "bytes=\(n)-"), (assets.bigURL, n, "bytes=\(n)-\(n + 5)"),
                         (assets.bigURL, n, "bytes=99999999-"), (assets.oneURL, 1, "bytes=1-"), (assets.emptyURL, 0, "bytes=0-0"),
                         (assets.emptyURL, 0, "bytes=-1"), (assets.emptyURL, 0, "bytes=0-")]
            for (url, size, spec) in cases {
                let answer = await Self.get(assets, url, ["Range": spec]).answer
                #expect(answer.status == 416 && answer.header("Content-Range") == "bytes */\(size)", "Range: \(spec): \(answer) \(answer.headers)")
                #expect(answer.serverErrorCode == "BAD_REQUEST", "Range: \(spec): the error shape: \(answer)")
            }
            let empty = await Self.get(assets, assets.emptyURL, [:])
            #expect(empty.answer.status == 200 && empty.length == 0 && empty.answer.body.isEmpty, "\(empty.answer)")
        }
    }

    @Test func severalRangesOrAnUnreadableSyntaxGetTheWholeBody() async throws {
        try await Self.with { assets in
            let n = Self.size
            for spec in ["bytes=0-0,5-9", "bytes=0-0, \(n - 1)-", "bytes=abc", "items=0-5", "bytes=5-3", "bytes=--1", "bytes=0-5x", "bytes=",
                         "bytes=-", "bytes=1-2-3", "bytes=x-5"] {
                let download = await Self.get(assets, assets.bigURL, ["Range": spec])
                #expect(download.answer.status == 200 && download.answer.header("Content-Range") == nil, "Range: \(spec): \(download.answer.status)")
                #expect(download.length == n && download.answer.body == assets.big, "Range: \(spec): the whole body")
            }
            // If-Range (RFC 9110 §13.1.5): a Range counts only with the current strong ETag.
            await Self.expectRange(assets, assets.bigURL, assets.big, "bytes=10-19", 10, 19)
            let stale = await Self.get(assets, assets.bigURL, ["Range": "bytes=10-19", "If-Range": assets.oneTag])
            #expect(stale.answer.status == 200 && stale.answer.body == assets.big, "If-Range with another tag: the whole body")
            let current = await Self.get(assets, assets.bigURL, ["Range": "bytes=10-19", "If-Range": assets.bigTag])
            #expect(current.answer.status == 206 && current.answer.body == Array(assets.big[10...19]), "If-Range with the ETag: the range")
        }
    }

    @Test func headAnnouncesTheLengthAndSendsNoBody() async throws {
        try await Self.with { assets in
            let whole = await Self.get(assets, assets.bigURL, [:], method: "HEAD")
            #expect(whole.answer.status == 200 && whole.length == Self.size && whole.answer.header("ETag") == assets.bigTag, "\(whole.answer.headers)")
            #expect(whole.answer.body.isEmpty)
            let ranged = await Self.get(assets, assets.bigURL, ["Range": "bytes=10-19"], method: "HEAD")
            #expect(ranged.answer.status == 206 && ranged.length == 10 && ranged.answer.header("Content-Range") == "bytes 10-19/\(Self.size)")
            #expect(ranged.answer.body.isEmpty)
        }
    }

    @Test func ifNoneMatchWithTheETagIsNotModified() async throws {
        try await Self.with { assets in
            for tag in [assets.bigTag, "\"other\", \(assets.bigTag)", "*", "W/\(assets.bigTag)"] {
                let answer = await Self.get(assets, assets.bigURL, ["If-None-Match": tag]).answer
                #expect(answer.status == 304 && answer.header("ETag") == assets.bigTag && answer.body.isEmpty, "If-None-Match: \(tag): \(answer)")
            }
            let ranged = await Self.get(assets, assets.bigURL, ["If-None-Match": assets.bigTag, "Range": "bytes=0-9"]).answer
            #expect(ranged.status == 304, "with a Range too")
            let head = await Self.get(assets, assets.bigURL, ["If-None-Match": assets.bigTag], method: "HEAD").answer
            #expect(head.status == 304, "HEAD too")
            for tag in ["\"other\"", assets.bigTag.replacingOccurrences(of: "\"", with: ""), assets.oneTag] {
                let answer = await Self.get(assets, assets.bigURL, ["If-None-Match": tag]).answer
                #expect(answer.status == 200 && answer.body == assets.big, "If-None-Match: \(tag): the whole body")
            }
        }
    }

    @Test func aDownloadCutOffByItsClientStopsAndTheNextIsWhole() async throws {
        try await Self.with { assets in
            let sink = assets.fixture.start("GET", APIFixture.path(of: assets.bigURL), token: assets.token, sink: CapturingSink(leaveAfterBytes: 300_000))
            #expect(await eventually(within: 20) { sink.writesAfterGone > 0 }, "the download went on after its client left")
            try await Task.sleep(nanoseconds: 300_000_000)
            #expect(sink.writesAfterGone == 1, "a write that finds the client gone ends the download: \(sink.writesAfterGone) writes after")
            #expect(sink.soFar.body.count < Self.size, "cut after \(sink.soFar.body.count) bytes")
            let next = await Self.get(assets, assets.bigURL, [:])
            #expect(next.answer.status == 200 && next.answer.body == assets.big, "the next download is whole")
        }
    }
}
