import Foundation
import NimbusPostgres
import Testing

@Suite struct PGRowDecodingTests {
    @Test func decodingAColumnAsTheWrongTypeThrowsDecoding() async throws {
        try await TestDatabase.with { database in
            let outcomes = try await database.withConnection { connection in
                try connection.queryFirst("""
                    SELECT 'text'::text, 1::int4, true, NULL::int8, '\\x00'::bytea, now(), 1.5::float8, gen_random_uuid()
                    """) { row -> [String: PGError.Kind?] in
                    func kind(_ body: () throws -> Any) -> PGError.Kind? {
                        do { _ = try body(); return nil } catch let error as PGError { return error.kind } catch { return nil }
                    }
                    return [
                        "text as int64": kind { try row.int64(0) },
                        "text as bool": kind { try row.bool(0) },
                        "text as uuid": kind { try row.uuid(0) },
                        "int4 as string": kind { try row.string(1) },
                        "int4 as bytes": kind { try row.bytes(1) },
                        "int4 as date": kind { try row.date(1) },
                        "bool as int": kind { try row.int(2) },
                        "null as int64": kind { try row.int64(3) },
                        "bytea as string": kind { try row.string(4) },
                        "timestamptz as int64": kind { try row.int64(5) },
                        "timestamptz as jsonb": kind { try row.jsonb(5) },
                        "float8 as milliseconds": kind { try row.milliseconds(6) },
                        "uuid as string": kind { try row.string(7) },
                        "column out of range": kind { try row.int64(99) },
                        "missing column name": kind { try row.column("nope") },
                    ]
                }!
            }
            for (name, kind) in outcomes.sorted(by: { $0.key < $1.key }) {
                #expect(kind == .decoding, "\(name)")
            }
        }
    }

    /// 'infinity' is a valid timestamptz; decoding it must not trap on Int64 overflow
    /// (micros + epoch offset). Run in a child process so that a trap fails only this test.
    @Test func decodingAnInfiniteTimestampDoesNotCrash() async throws {
        _ = try TestDatabase.adminURL()
        await #expect(processExitsWith: .success) {
            let url = ProcessInfo.processInfo.environment["NIMBUS_TEST_DATABASE_URL"]!
            let connection = try PGConnection.connect(url: url)
            _ = try connection.queryFirst("SELECT 'infinity'::timestamptz, '-infinity'::timestamptz") { row in
                _ = try? row.milliseconds(0)
                _ = try? row.date(0)
                _ = try? row.milliseconds(1)
                _ = try? row.date(1)
            }
        }
    }

    /// NULL and an empty value both have length 0: only NULL is refused.
    @Test func anEmptyValueIsNotNull() async throws {
        try await TestDatabase.with { database in
            let read = try await database.withConnection { connection in
                try connection.queryFirst("SELECT ''::text, ''::bytea, NULL::text, NULL::bytea") { row in
                    (try row.string(0), try row.bytes(1), try? row.string(2), try? row.bytes(3), try row.optionalString(2))
                }
            }
            #expect(read?.0 == "" && read?.1 == [])
            #expect(read?.2 == nil && read?.3 == nil && read?.4 == nil)
        }
    }
}
