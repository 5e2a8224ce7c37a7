import Foundation
import Testing
@testable import NimbusKit

/// The next page's token read from a page's last bytes (`ChangesContinuation`): the guess the
/// engine asks the next page with. Wherever it guesses, it must agree with the decoder; where the
/// shape is unusual it must say nothing rather than guess wrong.
@Suite("records/changes: the continuation read from a page's end")
struct ChangesContinuationTests {
    func guess(_ json: String) -> ChangesContinuation.Guess? { ChangesContinuation.guess(Data(json.utf8)) }

    @Test func theServersShapeGivesTheTokenAndMoreComingTheDecoderReads() throws {
        let pages = [
            #"{"zoneID":{"zoneName":"big"},"records":[{"recordName":"r-1","recordType":"E","fields":{"t":{"value":"x\"],\"syncToken\":\"evil","type":"STRING"}}}],"syncToken":"AQEAAAAAAAAAAQ_-","moreComing":true}"#,
            #"{"records":[],"syncToken":"tok","moreComing":false}"#,
            "{\"records\":[] , \"syncToken\" : \"tok2\" ,\n \"moreComing\" : true }\n",
            #"{"moreComing":true,"syncToken":"t3","records":[]}"#,  // the records last: no guess
            #"{"records":[],"syncToken":"t4"}"#,  // no moreComing: false
            #"{"records":[],"syncToken":"a\"b","moreComing":true}"#,  // an escape: no guess
            #"{"records":[],"syncToken":"t5","moreComing":true,"extra":12}"#,  // a number last: no guess
            #"{"records":[],"syncToken":"tok\\","moreComing":true}"#,  // an escaped backslash last: no guess
        ]
        let expected: [ChangesContinuation.Guess?] = [
            .init(token: "AQEAAAAAAAAAAQ_-", moreComing: true), .init(token: "tok", moreComing: false),
            .init(token: "tok2", moreComing: true), nil, .init(token: "t4", moreComing: false), nil, nil, nil,
        ]
        for (page, want) in zip(pages, expected) {
            let got = guess(page)
            #expect(got == want, "\(page)")
            if let got {
                let decoded = try ChangesPageDecoder.decode(Data(page.utf8), zone: .default)
                #expect(decoded.syncToken.value == got.token && decoded.moreComing == got.moreComing, "\(page)")
            }
        }
    }

    @Test func truncatedOrMalformedEndsGiveNoGuessAndNeverCrash() {
        let full = #"{"records":[],"syncToken":"tok","moreComing":true}"#
        for cut in 0..<full.utf8.count {
            let prefix = String(decoding: Array(full.utf8.prefix(cut)), as: UTF8.self)
            #expect(guess(prefix) == nil, "\(prefix)")
        }
        for bad in ["", "}", "\"}", ":\"x\"}", "{\"syncToken\":true}", "{\"syncToken\"\"x\"}", "{\"syncToken\":\"x\"\"y\"}"] {
            #expect(guess(bad) == nil, "\(bad)")
        }
    }
}
