import Foundation
import NimbusSupport
import Testing

/// No missed change (was the curl scenario 34): 8 writers (each its own device token) create,
/// update and delete records in one zone — their own names and 5 shared names updated by everyone
/// with forceUpdate — while 4 readers follow records/changes in pages of 7 (two from the start, two
/// joining late from no token) as parallel tasks. Every acknowledged write is logged. At the end
/// every reader holds exactly the acknowledged records, each at its last acknowledged tag (deleted
/// ones absent or tombstones), nothing else; and no page went backwards: each page's change tags
/// (base 36 of the zone's sequence) ascend and lie above every tag of the reader's earlier pages.
@Suite struct NoMissedChangeTests {
    private static let writers = 8, readers = 4, page = 7, shared = 5
    private static let seconds = 5.0

    /// Set once the writers are done.
    private final class Flag: @unchecked Sendable {
        // @unchecked: `value` is read and written under `lock`.
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }

    private struct Ack: Sendable { var name: String, tag: String }
    private struct Reader: Sendable { var state: [String: String], pages: Int, received: Int, morePages: Int, errors: [String] }

    private static func fields(_ k: Int, _ n: Int) -> String {
        #"{"writer":{"value":\#(k)},"n":{"value":\#(n)},"payload":{"value":"\#(Int.random(in: 0..<32768))-\#(Int.random(in: 0..<32768))"}}"#
    }

    /// Writes until `deadline`; answers the acknowledged writes in order (tag `-` for a deletion).
    private static func writer(_ api: APIFixture, _ k: Int, _ token: String, until deadline: Date) async -> (acks: [Ack], errors: [String]) {
        var live: [String] = [], deleted: [String] = [], tags: [String: String] = [:], acks: [Ack] = [], errors: [String] = [], n = 0
        while Date() < deadline {
            n += 1
            let roll = Int.random(in: 0..<10)
            let operations: [String]
            if roll < 3 || live.isEmpty {
                operations = [Op.record("create", "w\(k)-\(n)", "Item", fields: fields(k, n))]
            } else if roll < 5 {
                operations = [Op.record("forceUpdate", "s\(Int.random(in: 0..<shared))", "Item", fields: fields(k, n))]
            } else if roll < 7, let name = live.randomElement() {
                operations = [Op.record("update", name, "Item", fields: fields(k, n), tag: tags[name])]
            } else if roll < 8, let name = live.randomElement() {
                operations = [Bool.random() ? Op.delete(name) : Op.delete(name, tag: tags[name])]
            } else if roll < 9, let name = deleted.randomElement() {
                operations = [Op.record("create", name, "Item", fields: fields(k, n))]
            } else {
                operations = [Op.record("create", "w\(k)-\(n)-a", "Item", fields: fields(k, n)),
                              Op.record("forceUpdate", "s\(Int.random(in: 0..<shared))", "Item", fields: fields(k, n)),
                              Op.record("create", "w\(k)-\(n)-b", "Item", fields: fields(k, n))]
            }
            let answer = await api.modify(token, zone: "Feed", operations)
            guard answer.status == 200, answer.codes.allSatisfy({ $0 == "ok" }) else {
                errors.append("writer \(k): \(String(describing: answer).prefix(300))")
                continue
            }
            for item in answer.records {
                guard let name = item["recordName"]?.stringValue else { continue }
                if item["deleted"]?.boolValue == true {
                    acks.append(Ack(name: name, tag: "-"))
                    tags[name] = nil
                    live.removeAll { $0 == name }
                    deleted.append(name)
                } else if let tag = item["recordChangeTag"]?.stringValue {
                    acks.append(Ack(name: name, tag: tag))
                    if name.hasPrefix("w") {
                        if tags[name] == nil { live.append(name) }
                        tags[name] = tag
                        deleted.removeAll { $0 == name }
                    }
                } else {
                    errors.append("writer \(k): no tag for \(name)")
                }
            }
        }
        return (acks, errors)
    }

    /// Follows records/changes in pages of `page` from `delay` on until the writers are done, then
    /// catches up once more.
    private static func reader(_ api: APIFixture, _ i: Int, _ token: String, delay: Double, done: Flag) async -> Reader {
        var result = Reader(state: [:], pages: 0, received: 0, morePages: 0, errors: [])
        var sync: String?, final = false, previousMax = -1
        let giveUp = Date().addingTimeInterval(seconds + 90)
        try? await Task.sleep(for: .seconds(delay))
        while true {
            guard Date() < giveUp else { result.errors.append("reader \(i) did not catch up"); break }
            let answer = await api.changes(token, zone: "Feed", syncToken: sync, limit: page)
            guard answer.status == 200 else { result.errors.append("reader \(i): \(answer)"); break }
            result.pages += 1
            let items = answer.records
            if items.count > page { result.errors.append("reader \(i): page of \(items.count) records, limit \(page)") }
            result.received += items.count
            var pageMax = previousMax, seen = Set<String>()
            for item in items {
                guard let name = item["recordName"]?.stringValue else { continue }
                let tag = item["deleted"]?.boolValue == true ? "-" : item["recordChangeTag"]?.stringValue ?? "?"
                if !seen.insert(name).inserted { result.errors.append("reader \(i): \(name) twice in one page") }
                result.state[name] = tag
                guard tag != "-" else { continue }
                let number = Int(tag, radix: 36) ?? -1
                if number <= pageMax { result.errors.append("reader \(i): tag \(tag) of \(name) is not above \(pageMax) (page \(result.pages))") }
                pageMax = number
            }
            previousMax = pageMax
            guard let next = answer.syncToken else { result.errors.append("reader \(i): no syncToken"); break }
            sync = next
            if answer.moreComing == true { result.morePages += 1; continue }
            if final { break }
            if done.isSet { final = true; continue }
            try? await Task.sleep(for: .milliseconds(Int.random(in: 0...200)))
        }
        return result
    }

    @Test func readersFollowingConcurrentWritersMissNothingAndNeverGoBackwards() async throws {
        try await APIFixture.with { api in
            var writerTokens: [String] = [], readerTokens: [String] = []
            for k in 1...Self.writers { writerTokens.append(try await api.token(device: "writer-\(k)")) }
            for i in 1...Self.readers { readerTokens.append(try await api.token(device: "reader-\(i)")) }
            _ = await api.modifyZones(writerTokens[0], ["create:Feed"])
            // The first save defines the type's fields (development schema), before the writers race.
            let seed = await api.modify(writerTokens[0], zone: "Feed", [Op.record("create", "seed", "Item", fields: #"{"writer":{"value":0},"n":{"value":0},"payload":{"value":"seed"}}"#)])
            try #require(seed.codes == ["ok"], "\(seed)")
            var acks = [Ack(name: "seed", tag: try #require(seed.tag("seed")))]

            let done = Flag(), deadline = Date().addingTimeInterval(Self.seconds)
            async let readerResults = withTaskGroup(of: Reader.self) { group in
                for (index, token) in readerTokens.enumerated() {
                    // Readers 3 and 4 join late, from no token.
                    group.addTask { await Self.reader(api, index + 1, token, delay: index >= 2 ? Self.seconds / 3 : 0, done: done) }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let writerResults = await withTaskGroup(of: (acks: [Ack], errors: [String]).self) { group in
                for (index, token) in writerTokens.enumerated() { group.addTask { await Self.writer(api, index + 1, token, until: deadline) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            done.set()
            let readers = await readerResults
            let errors = writerResults.flatMap(\.errors) + readers.flatMap(\.errors)
            try #require(errors.isEmpty, "\(errors.count) failures during the run: \(errors.prefix(20))")

            // The expected state from the acknowledgements; shared names: the highest tag is the last commit.
            acks += writerResults.flatMap(\.acks)
            var expected: [String: String] = [:]
            for ack in acks {
                if ack.name.hasPrefix("s"), let held = expected[ack.name], (Int(ack.tag, radix: 36) ?? 0) < (Int(held, radix: 36) ?? 0) { continue }
                expected[ack.name] = ack.tag
            }
            #expect(acks.count > 50, "only \(acks.count) acknowledged writes: the run proves little")
            #expect(expected.values.contains("-"), "no acknowledged deletion in the run")

            // The ground truth agrees: lookups, and a fetch from no token applied as a client applies it.
            var stored: [String: String] = [:]
            let names = expected.keys.sorted()
            for start in stride(from: 0, to: names.count, by: 300) {
                let lookup = await api.lookup(readerTokens[0], zone: "Feed", Array(names[start..<min(start + 300, names.count)]))
                for item in lookup.records {
                    let name = item["recordName"]?.stringValue ?? "?"
                    switch item["serverErrorCode"]?.stringValue {
                    case nil: stored[name] = item["recordChangeTag"]?.stringValue ?? "?"
                    case "NOT_FOUND": stored[name] = "-"
                    case let code?: Issue.record("lookup of \(name): \(code)")
                    }
                }
            }
            let disagreeing = names.filter { stored[$0] != expected[$0] }
            #expect(disagreeing.isEmpty, "records/lookup disagrees with the acknowledged writes: \(disagreeing.prefix(10).map { "\($0) \(expected[$0] ?? "") ≠ \(stored[$0] ?? "absent")" })")
            var fresh: [String: String] = [:], sync: String?
            while true {
                let answer = await api.changes(readerTokens[0], zone: "Feed", syncToken: sync, limit: 100)
                for line in answer.summary {
                    let parts = line.split(separator: " ").map(String.init)
                    if parts[1] == "-" { fresh[parts[0]] = nil } else { fresh[parts[0]] = parts[1] }
                }
                sync = answer.syncToken
                guard answer.moreComing == true, sync != nil else { break }
            }
            #expect(fresh == expected.filter { $0.value != "-" }, "a fetch from no token disagrees with the acknowledged live records")

            for (index, reader) in readers.enumerated() {
                let missed = expected.filter { $0.value != "-" && reader.state[$0.key] == nil }.map(\.key)
                let stale = expected.filter { name, tag in reader.state[name].map { $0 != tag } ?? false }.map(\.key)
                let extra = reader.state.keys.filter { expected[$0] == nil }
                #expect(missed.isEmpty && stale.isEmpty && extra.isEmpty,
                        "reader \(index + 1): missed \(missed.prefix(5)), stale \(stale.prefix(5)), extra \(extra.prefix(5))")
                #expect(reader.morePages > 0, "reader \(index + 1) never paged: the run proves little")
            }
        }
    }
}
