@testable import NimbusCore
import Testing

/// docs/api.md, "Ambiguous input is refused, never guessed": the domain rules.
@Suite struct AmbiguousInputTests {
    let fixtures = FieldTyperTests()
    let event = RecordTypeSchema(name: "BlockedAppEvent", fields: ["timestamp": .timestamp, "appName": .string],
                                 retention: RetentionPolicy(days: 30, field: "timestamp"), appendOnly: true)

    @Test(arguments: [".", "..", "...", String(repeating: ".", count: 255)])
    func containerNamesMadeOnlyOfDotsAreRefused(name: String) {
        #expect(!Names.isValidContainer(name))
    }

    @Test(arguments: ["iCloud.com.mirxa.AppLocker", ".hidden", "a..b", "..a"])
    func containerNamesWithDotsAndOtherCharactersStayValid(name: String) {
        #expect(Names.isValidContainer(name))
    }

    @Test(arguments: ["1795000000000.5", "1.5", "-0.25", "1795000000000.001"])
    func timestampsWithAFractionAreRefusedAsInt64sWithOneAre(json: String) {
        let result = fixtures.type(#"{"when": {"value": \#(json), "type": "TIMESTAMP"}}"#, schema: nil)
        #expect(result.itemError?.code == .badRequest)
        #expect(result.itemError?.reason.contains("whole milliseconds") == true, "\(String(describing: result.itemError))")
        #expect(fixtures.type(#"{"count": {"value": \#(json), "type": "INT64"}}"#, schema: nil).itemError?.code == .badRequest)
    }

    @Test func wholeTimestampsStillPass() {
        #expect(fixtures.type(#"{"when": {"value": 1795000000000, "type": "TIMESTAMP"}}"#, schema: nil).itemError == nil)
    }

    @Test(arguments: ["9223372036854775808", "-9223372036854775809", "18446744073709551615", "[1, 99999999999999999999]"])
    func untypedIntegersBeyond64BitsAreRefusedNotTypedDouble(json: String) {
        let result = fixtures.type(#"{"big": {"value": \#(json)}}"#, schema: nil)
        #expect(result.itemError?.code == .badRequest, "\(json)")
        #expect(result.itemError?.reason.contains("outside 64 bits") == true)
    }

    @Test func untypedIntegersAtTheEdgeOf64BitsAndTypedBigDoublesPass() {
        #expect(fixtures.type(#"{"big": {"value": 9223372036854775807}}"#, schema: nil).itemError == nil)
        #expect(fixtures.type(#"{"big": {"value": -9223372036854775808}}"#, schema: nil).itemError == nil)
        #expect(fixtures.type(#"{"big": {"value": 9223372036854775808, "type": "DOUBLE"}}"#, schema: nil).itemError == nil)
        #expect(fixtures.type(#"{"big": {"value": 1.5e3}}"#, schema: nil).itemError == nil)
        // The parser keeps no lexeme: an untyped whole number of up to 20 digits past 2⁶³ is refused
        // however it is written; with a type it is a DOUBLE; larger ones are plainly doubles.
        #expect(fixtures.type(#"{"big": {"value": 1e19}}"#, schema: nil).itemError?.code == .badRequest)
        #expect(fixtures.type(#"{"big": {"value": 1e19, "type": "DOUBLE"}}"#, schema: nil).itemError == nil)
        #expect(fixtures.type(#"{"big": {"value": 1.5e30}}"#, schema: nil).itemError == nil)
        #expect(fixtures.type(#"{"big": {"value": [0.25, 1e300]}}"#, schema: nil).itemError == nil)
    }

    @Test(arguments: [1_795_000_000, 0, 978_307_199_999])
    func retentionTimestampsThatLookLikeSecondsAreRefused(value: Int64) {
        let typer = FieldTyper(environment: .development)
        let result = typer.type([RawField(name: "timestamp", value: .integer(value))], recordName: "evt-1",
                                recordType: "BlockedAppEvent", schema: event)
        #expect(result.itemError?.code == .badRequest)
        #expect(result.itemError?.reason.contains("milliseconds since 1970") == true)
        #expect(result.itemError?.recordName == "evt-1")
    }

    @Test func retentionTimestampsFrom2001OnAndOtherFieldsPass() {
        let typer = FieldTyper(environment: .development)
        #expect(typer.type([RawField(name: "timestamp", value: .integer(978_307_200_000))], recordName: "e", recordType: "BlockedAppEvent",
                           schema: event).itemError == nil)
        let other = RecordTypeSchema(name: "Note", fields: ["timestamp": .timestamp])
        #expect(typer.type([RawField(name: "timestamp", value: .integer(5))], recordName: "n", recordType: "Note",
                           schema: other).itemError == nil)
    }
}
