import NimbusWire
import NimbusSupport  // SplitMix64
import Testing

@Suite struct JSONParserTests {
    // MARK: Numbers

    @Test func classifiesNumbersAsIntegerOrDouble() throws {
        #expect(try JSONValue.parse("1") == .integer(1))
        #expect(try JSONValue.parse("1.0") == .double(1))
        #expect(try JSONValue.parse("1e2") == .double(100))
        #expect(try JSONValue.parse("-17") == .integer(-17))
        #expect(try JSONValue.parse("9223372036854775807") == .integer(.max))
        #expect(try JSONValue.parse("-9223372036854775808") == .integer(.min))
        #expect(try JSONValue.parse("9223372036854775808") == .double(9223372036854775808))
        #expect(try JSONValue.parse("-9223372036854775809") == .double(-9223372036854775808))
        #expect(try JSONValue.parse("18446744073709551616") == .double(18446744073709551616))
        #expect(try JSONValue.parse("100000000000000000000000") == .double(1e23))
    }

    @Test func keepsTheSignOfNegativeZeroOnlyForDoubles() throws {
        #expect(try JSONValue.parse("-0") == .integer(0))
        let negativeZero = try #require(try JSONValue.parse("-0.0").doubleValue)
        #expect(negativeZero == 0 && negativeZero.sign == .minus)
        let underflow = try #require(try JSONValue.parse("-1e-400").doubleValue)
        #expect(underflow == 0 && underflow.sign == .minus)
    }

    @Test func roundsDecimalTextCorrectly() throws {
        // Halfway and near-halfway cases that a naive digit-by-digit accumulation gets wrong.
        let cases: [(String, Double)] = [
            ("0.1", 0.1),
            ("0.1000000000000000055511151231257827021181583404541015625", 0.1),
            ("9007199254740993.0", 9007199254740992),
            ("9007199254740995.0", 9007199254740996),
            ("2.2250738585072014e-308", 2.2250738585072014e-308),
            ("2.2250738585072011e-308", Double(bitPattern: 0x000F_FFFF_FFFF_FFFF)),  // largest subnormal
            ("1.00000000000000011102230246251565404236316680908203125", 1),  // exact tie: to even
            ("1.00000000000000011102230246251565404236316680908203126", 1.0000000000000002),
            ("1.00000000000000011102230246251565404236316680908203124", 1),
            ("7.1e-10", 7.1e-10),
            ("123456789012345.6", 123456789012345.6),
        ]
        for (text, expected) in cases {
            let parsed = try #require(try JSONValue.parse(text).doubleValue)
            #expect(parsed.bitPattern == expected.bitPattern, "\(text)")
        }
    }

    @Test func agreesWithTheStandardLibraryOnRandomDecimals() throws {
        var random = SplitMix64(seed: 0x5EED_0001)
        for _ in 0..<5000 {
            var text = random.next() % 2 == 0 ? "-" : ""
            text += random.digits(count: Int(random.next() % 20) + 1, leadingNonZero: true)
            text += "." + random.digits(count: Int(random.next() % 20) + 1, leadingNonZero: false)
            if random.next() % 2 == 0 {
                text += "e\(Int(random.next() % 660) - 330)"
            }
            let reference = try #require(Double(text))
            if reference.isFinite {
                let parsed = try #require(try JSONValue.parse(text).doubleValue)
                #expect(parsed.bitPattern == reference.bitPattern, "\(text)")
            } else {
                #expect(throws: JSONValue.ParseError.self) { try JSONValue.parse(text) }
            }
        }
    }

    // MARK: Errors

    @Test func reportsOffsetAndReason() {
        let cases: [(String, Int, String)] = [
            (#"{"a" 1}"#, 5, "expected ':' after an object key"),
            ("[1,]", 3, "expected a value, found ']'"),
            (#"{"a":1,"a":2}"#, 7, "duplicate key \"a\""),
            ("[1] x", 4, "unexpected 'x' after the value"),
            ("", 0, "empty input"),
            ("[01]", 1, "invalid number, leading zeros are not allowed"),
            ("[1e400]", 1, "number out of range"),
            (#"["ab"#, 1, "unterminated string"),
            ("[1", 2, "unexpected end of input in an array"),
            (#"["\uD800x"]"#, 2, "unpaired high surrogate escape"),
            (#"["\uDC00"]"#, 2, "unpaired low surrogate escape"),
            ("[\"a\nb\"]", 3, "unescaped control character U+000A in a string"),
            ("[tru]", 1, "invalid literal, expected 'true'"),
        ]
        for (text, offset, reason) in cases {
            #expect(throws: JSONValue.ParseError(offset: offset, reason: reason), "\(text)") { try JSONValue.parse(text) }
        }
    }

    @Test func reportsTheOffsetOfAnInvalidUTF8Byte() {
        #expect(throws: JSONValue.ParseError(offset: 3, reason: "invalid UTF-8 byte 0xFF")) {
            try JSONValue.parse([0x5B, 0x22, 0x61, 0xFF, 0x22, 0x5D])
        }
    }

    @Test func describesTheErrorWithByteOffset() {
        let error = JSONValue.ParseError(offset: 17, reason: "expected ':' after an object key")
        #expect(error.description == "invalid JSON at byte 17: expected ':' after an object key")
    }

    @Test func duplicateKeysAreFoundInLargeObjects() {
        let members = (0..<50).map { "\"k\($0)\":\($0)" } + ["\"k31\":0"]
        #expect(throws: JSONValue.ParseError.self) { try JSONValue.parse("{" + members.joined(separator: ",") + "}") }
    }

    @Test func duplicateKeysMayRepeatInSeparateObjects() throws {
        let value = try JSONValue.parse(#"[{"a":1},{"a":2}]"#)
        #expect(value == [["a": 1], ["a": 2]])
    }

    // MARK: Limits

    @Test func acceptsNestingAtMaxDepthAndRejectsOneMore() throws {
        let limits = JSONValue.ParseLimits(maxDepth: 64)
        let atLimit = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        let overLimit = "[" + atLimit + "]"
        _ = try JSONValue.parse(atLimit, limits: limits)
        #expect(throws: JSONValue.ParseError(offset: 64, reason: "nesting deeper than 64 levels")) {
            try JSONValue.parse(overLimit, limits: limits)
        }
        #expect(throws: JSONValue.ParseError.self) {
            try JSONValue.parse(#"{"a":{"a":{}}}"#, limits: .init(maxDepth: 2))
        }
        _ = try JSONValue.parse(#"{"a":[],"b":{}}"#, limits: .init(maxDepth: 2))
    }

    @Test func rejectsDeepNestingWithoutExhaustingTheStack() {
        let hostile = String(repeating: "[", count: 100_000)
        #expect(throws: JSONValue.ParseError(offset: 64, reason: "nesting deeper than 64 levels")) {
            try JSONValue.parse(hostile)
        }
    }

    @Test func acceptsStringsAtMaxStringBytesAndRejectsOneMore() throws {
        let limits = JSONValue.ParseLimits(maxStringBytes: 4)
        #expect(try JSONValue.parse(#"["abcd"]"#, limits: limits) == ["abcd"])
        #expect(try JSONValue.parse(#"["ab\nc"]"#, limits: limits) == ["ab\nc"])
        #expect(try JSONValue.parse(#"["é\u00e9"]"#, limits: limits) == ["éé"])
        #expect(throws: JSONValue.ParseError(offset: 1, reason: "string longer than 4 bytes")) {
            try JSONValue.parse(#"["abcde"]"#, limits: limits)
        }
        #expect(throws: JSONValue.ParseError.self) { try JSONValue.parse(#"["abc\n\n"]"#, limits: limits) }
        #expect(throws: JSONValue.ParseError.self) { try JSONValue.parse(#"{"abcde":1}"#, limits: limits) }
    }

    // MARK: Inputs

    @Test func parsesEveryKindOfByteCollection() throws {
        let text = #"{"a":[1,"é"]}"#
        let expected: JSONValue = ["a": [1, "é"]]
        let bytes = Array(text.utf8)
        #expect(try JSONValue.parse(text) == expected)
        #expect(try JSONValue.parse(bytes) == expected)
        #expect(try JSONValue.parse(bytes[...]) == expected)
        #expect(try JSONValue.parse(("xx" + text).utf8.dropFirst(2)) == expected)
        #expect(try JSONValue.parse(bytes.lazy.map { $0 }) == expected)          // not contiguous
        #expect(try JSONValue.parse(ContiguousArray(bytes)) == expected)
    }

    @Test func parsesTheExamplesOfRFC8259() throws {
        let image = try JSONValue.parse("""
            {
              "Image": {
                  "Width":  800,
                  "Height": 600,
                  "Title":  "View from 15th Floor",
                  "Thumbnail": {
                      "Url":    "http://www.example.com/image/481989943",
                      "Height": 125,
                      "Width":  100
                  },
                  "Animated" : false,
                  "IDs": [116, 943, 234, 38793]
                }
            }
            """)
        #expect(image["Image"]?["Thumbnail"]?["Url"] == "http://www.example.com/image/481989943")
        #expect(image["Image"]?["IDs"] == [116, 943, 234, 38793])
        #expect(image["Image"]?.objectValue?.keys == ["Width", "Height", "Title", "Thumbnail", "Animated", "IDs"])

        let places = try JSONValue.parse("""
            [
              {
                 "precision": "zip",
                 "Latitude":  37.7668,
                 "Longitude": -122.3959,
                 "Address":   "",
                 "City":      "SAN FRANCISCO",
                 "State":     "CA",
                 "Zip":       "94107",
                 "Country":   "US"
              },
              {
                 "precision": "zip",
                 "Latitude":  37.371991,
                 "Longitude": -122.026020,
                 "Address":   "",
                 "City":      "SUNNYVALE",
                 "State":     "CA",
                 "Zip":       "94085",
                 "Country":   "US"
              }
            ]
            """)
        #expect(places.arrayValue?.count == 2)
        #expect(places.arrayValue?[1]["Longitude"] == .double(-122.026020))
        #expect(places.arrayValue?[0]["Address"] == "")

        #expect(try JSONValue.parse(#""Hello world!""#) == "Hello world!")
        #expect(try JSONValue.parse("42") == 42)
        #expect(try JSONValue.parse("true") == true)
    }
}
