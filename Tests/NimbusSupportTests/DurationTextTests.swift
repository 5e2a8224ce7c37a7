import NimbusSupport
import Testing

@Suite struct DurationTextTests {
    @Test func durationsParseAndRefuseOtherText() {
        #expect(DurationText.seconds("30d") == 2_592_000)
        #expect(DurationText.seconds("0s") == 0)
        #expect(DurationText.seconds("90") == nil && DurationText.seconds("-1d") == nil && DurationText.seconds("1w") == nil)
    }

    @Test func momentsReadAsFutureOrOverdue() {
        #expect(DurationText.relative(seconds: 18_000) == "in 5h")
        #expect(DurationText.relative(seconds: -1_296_000) == "overdue by 360h")
        #expect(DurationText.relative(seconds: 2_400) == "in 40m")
        #expect(DurationText.relative(seconds: -30) == "overdue by 30s")
        #expect(DurationText.relative(seconds: 0) == "in 0s")
    }
}
