import Foundation
import NimbusPostgres
import NimbusSupport
import Testing

/// Values go out as binary parameters with explicit type OIDs and come back as binary columns.
/// Where decoding alone could hide an encoding mistake, the server also checks the value itself.
@Suite struct PGDataRoundTripTests {
    @Test func integersRoundTripIncludingExtremes() async throws {
        try await TestDatabase.with { database in
            let result = try await database.withConnection { connection in
                let int32s = try [Int32.min, -1, 0, 1, Int32.max].map { value in
                    try connection.queryFirst("SELECT \(value)") { row in
                        (Int32(try row.int(0)), row.type(0))
                    }!
                }
                let int64s = try [Int64.min, -1, 0, 1 << 40, Int64.max].map { value in
                    try connection.queryFirst("SELECT \(value)") { row in (try row.int64(0), row.type(0)) }!
                }
                // The server sees the value, not just the bytes: arithmetic on it is right.
                let serverSide = try connection.queryFirst("SELECT (\(Int64.max) - 1)::text, (\(Int32.min) + 0)::text") { row in
                    (try row.string(0), try row.string(1))
                }!
                return (int32s, int64s, serverSide)
            }
            #expect(result.0.map(\.0) == [Int32.min, -1, 0, 1, Int32.max])
            #expect(result.0.allSatisfy { $0.1 == PGData.OID.int4 })
            #expect(result.1.map(\.0) == [Int64.min, -1, 0, 1 << 40, Int64.max])
            #expect(result.1.allSatisfy { $0.1 == PGData.OID.int8 })
            #expect(result.2 == ("9223372036854775806", "-2147483648"))
        }
    }

    @Test func doublesRoundTripIncludingNegativeZeroAndInfinities() async throws {
        try await TestDatabase.with { database in
            let values: [Double] = [0, -0.0, 1.5, -123456.789, .pi, .leastNonzeroMagnitude, .greatestFiniteMagnitude, .infinity, -.infinity]
            let (decoded, nan, serverText) = try await database.withConnection { connection in
                let decoded = try values.map { value in try connection.queryFirst("SELECT \(value)") { try $0.double(0) }! }
                let nan = try connection.queryFirst("SELECT \(Double.nan)") { try $0.double(0) }!
                let serverText = try connection.queryFirst("SELECT \(-0.0)::text, \(Double.infinity)::text, \(1.5)::text") {
                    [try $0.string(0), try $0.string(1), try $0.string(2)]
                }!
                return (decoded, nan, serverText)
            }
            #expect(decoded.map(\.bitPattern) == values.map(\.bitPattern), "\(decoded)")
            #expect(decoded[1].sign == .minus)
            #expect(nan.isNaN)
            #expect(serverText == ["-0", "Infinity", "1.5"])
        }
    }

    @Test func textRoundTripsUnicodeAndTheEmptyString() async throws {
        try await TestDatabase.with { database in
            let values = ["", "plain", "héllo wörld", "日本語のテキスト", "👋🏽 family: 👨‍👩‍👧‍👦", "quote ' and \" and \\ backslash", "line\nbreak\ttab"]
            let (decoded, lengths, nullFlags) = try await database.withConnection { connection in
                let decoded = try values.map { value in try connection.queryFirst("SELECT \(value)") { try $0.string(0) }! }
                let lengths = try values.map { value in try connection.queryFirst("SELECT char_length(\(value))") { try $0.int(0) }! }
                let nullFlags = try connection.queryFirst("SELECT \("")") { $0.isNull(0) }!
                return (decoded, lengths, nullFlags)
            }
            #expect(decoded == values)
            #expect(lengths == values.map(\.unicodeScalars.count))
            #expect(nullFlags == false, "the empty string is not NULL")
        }
    }

    @Test func boolsRoundTrip() async throws {
        try await TestDatabase.with { database in
            let result = try await database.withConnection { connection in
                try connection.queryFirst("SELECT \(true), \(false), NOT \(true), \(true)::text") { row in
                    [try row.bool(0), try row.bool(1), try row.bool(2), try row.string(3) == "true"]
                }!
            }
            #expect(result == [true, false, false, true])
        }
    }

    @Test func byteaRoundTripsEmptyAllByteValuesAndOneMebibyte() async throws {
        try await TestDatabase.with { database in
            let allBytes = [UInt8](0...255)
            var generator = SystemRandomNumberGenerator()
            let big = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let result = try await database.withConnection { connection in
                try connection.run("CREATE TABLE blobs (id int4 PRIMARY KEY, data bytea NOT NULL)")
                try connection.run("INSERT INTO blobs VALUES (\(Int32(1)), \([UInt8]())), (\(Int32(2)), \(allBytes)), (\(Int32(3)), \(big))")
                let stored = try connection.query("SELECT data, octet_length(data) FROM blobs ORDER BY id") { row in
                    (try row.bytes(0), try row.int(1), row.isNull(0))
                }
                // The server holds the raw bytes, not their hex text: octet_length and a byte read
                // server-side match the input.
                let probe = try connection.queryFirst("SELECT get_byte(\(allBytes), 255), get_byte(\(allBytes), 0)") { row in
                    (try row.int(0), try row.int(1))
                }!
                return (stored, probe)
            }
            let stored = result.0
            try #require(stored.count == 3)
            #expect(stored[0].0 == [])
            #expect(stored[0].1 == 0)
            #expect(stored[0].2 == false, "an empty bytea is not NULL")
            #expect(stored[1].0 == allBytes)
            #expect(stored[1].1 == 256)
            #expect(stored[2].0 == big)
            #expect(stored[2].1 == 1 << 20)
            #expect(result.1 == (255, 0))
        }
    }

    @Test func oneMebibyteByteaHashesTheSameOnTheServer() async throws {
        try await TestDatabase.with { database in
            var generator = SystemRandomNumberGenerator()
            let big = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let (serverDigest, returned) = try await database.withConnection { connection in
                (try connection.queryFirst("SELECT encode(sha256(\(big)), 'hex')") { try $0.string(0) }!,
                 try connection.queryFirst("SELECT \(big)") { try $0.bytes(0) }!)
            }
            #expect(serverDigest == Hex.encode(SHA256.hash(big)))
            #expect(returned.count == big.count)
            #expect(Hex.encode(SHA256.hash(returned)) == serverDigest)
        }
    }

    @Test func jsonbRoundTripsAsEquivalentText() async throws {
        try await TestDatabase.with { database in
            let document = #"{"name": "Ünïcode ☃", "list": [1, 2.5, null, true], "nested": {"b": 2, "a": 1}}"#
            let (text, name, nestedA, typeOID) = try await database.withConnection { connection in
                try connection.run("CREATE TABLE docs (body jsonb)")
                try connection.run("INSERT INTO docs VALUES (\(PGData.jsonb(document)))")
                return try connection.queryFirst("SELECT body, body->>'name', (body->'nested'->>'a')::int4 FROM docs") { row in
                    (try row.jsonb(0), try row.string(1), try row.int(2), row.type(0))
                }!
            }
            #expect(typeOID == PGData.OID.jsonb)
            #expect(name == "Ünïcode ☃")
            #expect(nestedA == 1)
            let sent = try JSONSerialization.jsonObject(with: Data(document.utf8)) as? NSDictionary
            let received = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary
            #expect(sent != nil && sent == received, "received \(text)")
        }
    }

    @Test func jsonbColumnDecodesAsStringToo() async throws {
        try await TestDatabase.with { database in
            let text = try await database.withConnection { connection in
                try connection.queryFirst("SELECT '[1,  2]'::jsonb") { try $0.string(0) }!
            }
            #expect(text == "[1, 2]")
        }
    }

    @Test func timestamptzRoundTripsMillisecondsAndDates() async throws {
        try await TestDatabase.with { database in
            let millis: [Int64] = [1_700_000_000_123, 0, 946_684_800_000, 946_684_799_999, -86_400_000 + 123, 4_102_444_800_001]
            let dates = millis.map { Date(timeIntervalSince1970: Double($0) / 1000) }
            let result = try await database.withConnection { connection in
                try connection.run("CREATE TABLE times (id int4, at timestamptz)")
                for (index, date) in dates.enumerated() {
                    try connection.run("INSERT INTO times VALUES (\(Int32(index)), \(date))")
                }
                let rows = try connection.query("""
                    SELECT at, at, (extract(epoch FROM at) * 1000)::int8, row_number() OVER () FROM times ORDER BY id
                    """) { row in
                    (try row.milliseconds(0), try row.date(1), try row.int64(2), row.type(0))
                }
                let fixed = try connection.queryFirst("SELECT '2024-02-29 12:34:56.789+00'::timestamptz") { try $0.milliseconds(0) }!
                return (rows, fixed)
            }
            #expect(result.0.map(\.0) == millis, "milliseconds(_:)")
            #expect(result.0.map(\.2) == millis, "the server's own epoch")
            #expect(result.0.allSatisfy { $0.3 == PGData.OID.timestamptz })
            for (row, date) in zip(result.0, dates) {
                #expect(abs(row.1.timeIntervalSince1970 - date.timeIntervalSince1970) < 0.000_001, "date(_:) \(row.1) vs \(date)")
            }
            #expect(result.1 == 1_709_210_096_789)
        }
    }

    @Test func uuidRoundTripsInServerByteOrder() async throws {
        try await TestDatabase.with { database in
            let uuid = UUID()
            let fixed = UUID(uuidString: "12345678-9ABC-DEF0-1122-334455667788")!
            let (back, text, parsed) = try await database.withConnection { connection in
                (try connection.queryFirst("SELECT \(uuid)") { try $0.uuid(0) }!,
                 try connection.queryFirst("SELECT \(fixed)::text") { try $0.string(0) }!,
                 try connection.queryFirst("SELECT '12345678-9abc-def0-1122-334455667788'::uuid") { try $0.uuid(0) }!)
            }
            #expect(back == uuid)
            #expect(text == "12345678-9abc-def0-1122-334455667788")
            #expect(parsed == fixed)
        }
    }

    @Test func textAndInt8ArraysWorkWithAny() async throws {
        try await TestDatabase.with { database in
            let result = try await database.withConnection { connection in
                try connection.run("CREATE TABLE items (id int8, name text)")
                try connection.run("INSERT INTO items VALUES (1, 'apple'), (2, 'bänänä'), (3, 'cherry'), (10, ''), (-5, 'neg')")
                let byName = try connection.query("""
                    SELECT id FROM items WHERE name = ANY(\(PGData.textArray(["bänänä", "cherry", "", "missing"]))) ORDER BY id
                    """) { try $0.int64(0) }
                let byID = try connection.query("""
                    SELECT name FROM items WHERE id = ANY(\(PGData.int64Array([-5, 1, 10, Int64.max]))) ORDER BY id
                    """) { try $0.string(0) }
                let noneByName = try connection.query("SELECT id FROM items WHERE name = ANY(\(PGData.textArray([])))") { try $0.int64(0) }
                let noneByID = try connection.query("SELECT id FROM items WHERE id = ANY(\(PGData.int64Array([])))") { try $0.int64(0) }
                let lengths = try connection.queryFirst("""
                    SELECT cardinality(\(PGData.textArray(["a", "b", "c"]))), cardinality(\(PGData.int64Array([7]))),
                           (\(PGData.int64Array([Int64.min, Int64.max])))[2]
                    """) { row in [try row.int64(0), try row.int64(1), try row.int64(2)] }!
                return (byName, byID, noneByName, noneByID, lengths)
            }
            #expect(result.0 == [2, 3, 10])
            #expect(result.1 == ["neg", "apple", ""])
            #expect(result.2.isEmpty)
            #expect(result.3.isEmpty)
            #expect(result.4 == [3, 1, Int64.max])
        }
    }

    @Test func nullGoesOutAsOptionalNoneAndComesBackAsNil() async throws {
        try await TestDatabase.with { database in
            let missingText: String? = nil
            let missingNumber: Int64? = nil
            let present: Int64? = 5
            let result = try await database.withConnection { connection in
                try connection.run("CREATE TABLE n (i int8, s text, b bytea, t timestamptz)")
                // `.pgData` is what interpolating an Optional uses; spelled out to avoid the compiler's
                // "debug description for an optional value" warning (see directOptionalInterpolation).
                try connection.run("""
                    INSERT INTO n VALUES (\(missingNumber.pgData), \(missingText.pgData), \([UInt8]?.none.pgData), \(Date?.none.pgData)),
                                         (\(present.pgData), \(Optional("x").pgData), \(Optional([UInt8]([1])).pgData),
                                          \(Optional(Date(timeIntervalSince1970: 1)).pgData))
                    """)
                return try connection.query("SELECT i, s, b, t, i IS NULL FROM n ORDER BY i NULLS FIRST") { row in
                    (row.isNull(0), try row.optionalInt64(0), try row.optionalString(1), try row.optionalBytes(2),
                     try row.optionalDate(3), try row.optionalMilliseconds(3), try row.bool(4))
                }
            }
            try #require(result.count == 2)
            let null = result[0], some = result[1]
            #expect(null.0 == true)
            #expect(null.1 == nil && null.2 == nil && null.3 == nil && null.4 == nil && null.5 == nil)
            #expect(null.6 == true)
            #expect(some.0 == false)
            #expect(some.1 == 5 && some.2 == "x" && some.3 == [1] && some.5 == 1000)
            #expect(some.6 == false)
        }
    }

    @Test func directOptionalInterpolationSendsNullOrTheValue() async throws {
        try await TestDatabase.with { database in
            let missing: Int64? = nil
            let present: Int64? = 41
            // Compiles with a warning until SQL.StringInterpolation has an Optional overload.
            let sql: SQL = "SELECT \(missing)::int8 IS NULL, \(present)::int8 + 1"
            #expect(sql.parameters == [.null, .int64(41)])
            let row = try await database.withConnection { connection in
                try connection.queryFirst(sql) { row in (try row.bool(0), try row.int64(1)) }!
            }
            #expect(row == (true, 42))
        }
    }
}
