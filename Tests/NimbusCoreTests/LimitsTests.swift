import NimbusCore
import Testing

@Suite struct LimitsTests {
    @Test func everyLimitOfTheAPIContractHasADefault() {
        let names = Set(Limits().namedValues.map(\.name))
        let contract = ["maxOperationsPerRequest", "maxRecordBytes", "maxRequestBytes", "maxResultsLimit", "maxWaitSeconds",
                        "heartbeatSeconds", "maxAssetBytes", "maxAssetTokensPerRequest", "userQuotaBytes", "maxWaitersPerDevice",
                        "maxWaiters", "notificationRetentionDays", "tombstoneRetentionDays", "maxRequestLineBytes",
                        "maxHeaderLineBytes", "maxHeaderBytes", "maxHeaderCount", "headerTimeoutSeconds", "bodyTimeoutSeconds",
                        "keepAliveTimeoutSeconds", "pushGraceMillis", "maxBackgroundPushesPerHour", "maxPushPayloadBytes"]
        for name in contract {
            #expect(names.contains(name), "missing \(name)")
        }
    }

    @Test func defaultsAreThoseOfTheContract() {
        let values = Dictionary(uniqueKeysWithValues: Limits().namedValues.map { ($0.name, $0.value) })
        #expect(values["maxRequestBytes"] == 8 * 1024 * 1024)
        #expect(values["maxRequestLineBytes"] == 8192)
        #expect(values["maxHeaderLineBytes"] == 8192)
        #expect(values["maxHeaderBytes"] == 65536)
        #expect(values["maxHeaderCount"] == 100)
        #expect(values["headerTimeoutSeconds"] == 10)
        #expect(values["bodyTimeoutSeconds"] == 30)
        #expect(values["minBodyBytesPerSecond"] == 1024)
        #expect(values["keepAliveTimeoutSeconds"] == 60)
        #expect(values["maxOperationsPerRequest"] == 400)
        #expect(values["maxResultsLimit"] == 400)
        #expect(values["maxWaitSeconds"] == 55)
        #expect(values["maxAssetBytes"] == 50 * 1024 * 1024)
        #expect(values["pushGraceMillis"] == 1500)
        #expect(values["maxBackgroundPushesPerHour"] == 3)
        #expect(values["maxPushPayloadBytes"] == 4096)
    }

    @Test func setChangesExactlyTheNamedLimit() {
        var limits = Limits()
        let known = limits.set("maxHeaderCount", to: 7)
        #expect(known)
        #expect(limits.maxHeaderCount == 7)
        let unknown = limits.set("noSuchLimit", to: 1)
        #expect(!unknown)
        var expected = Limits()
        expected.maxHeaderCount = 7
        #expect(limits == expected)
        // Every named limit can be set through its name.
        for (name, _) in Limits().namedValues {
            var copy = Limits()
            let changed = copy.set(name, to: 123_456)
            #expect(changed)
            #expect(copy.namedValues.first { $0.name == name }?.value == 123_456)
        }
    }
}
