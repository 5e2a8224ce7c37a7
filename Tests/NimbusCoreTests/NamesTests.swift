@testable import NimbusCore
import Testing

/// The naming rules of docs/api.md ("Records" and "Details": Names).
@Suite struct NamesTests {
    static let letters = String(repeating: "a", count: 255)

    @Test func recordNamesAreOneTo255Characters() {
        #expect(Names.isValidRecordName("a"))
        #expect(Names.isValidRecordName(Self.letters))
        #expect(!Names.isValidRecordName(Self.letters + "a"))
        #expect(!Names.isValidRecordName(""))
    }

    @Test func recordNamesAllowLettersDigitsAndDashUnderscoreDotColon() {
        #expect(Names.isValidRecordName("evt-6F1C_a.b:c9"))
        #expect(Names.isValidRecordName("_private"))
        #expect(Names.isValidRecordName("0"))
        #expect(Names.isValidRecordName("locked-mac.mini:1"))
    }

    @Test(arguments: ["a b", "a/b", "a+b", "é", "a\u{0}", "name!", "a,b", "a@b", "ｆ", "a\nb", "🙂"])
    func recordNamesRefuseOtherCharacters(name: String) {
        #expect(!Names.isValidRecordName(name))
        #expect(!Names.isValidZoneName(name))
    }

    @Test func lengthCountsUTF8BytesSoNonASCIICannotSneakUnderTheLimit() {
        #expect(!Names.isValidRecordName(String(repeating: "é", count: 128)))
    }

    @Test func zoneNamesFollowTheRecordNameRules() {
        #expect(Names.isValidZoneName("Notes"))
        #expect(Names.isValidZoneName(Names.defaultZone))
        #expect(Names.isValidZoneName(Self.letters))
        #expect(!Names.isValidZoneName(Self.letters + "a"))
        #expect(!Names.isValidZoneName(""))
        #expect(Names.defaultZone == "_defaultZone")
    }

    @Test func recordTypesStartWithALetterThenLettersDigitsUnderscore() {
        #expect(Names.isValidRecordType("BlockedAppEvent"))
        #expect(Names.isValidRecordType("a"))
        #expect(Names.isValidRecordType("Type_2"))
        #expect(Names.isValidRecordType(Self.letters))
        #expect(!Names.isValidRecordType(Self.letters + "a"))
        for name in ["", "_Type", "2Type", "Type-2", "Type.2", "Type:2", "Ty pe", "Événement", "Type$"] {
            #expect(!Names.isValidRecordType(name), "\(name)")
        }
    }

    @Test func fieldNamesFollowTheRecordTypeRules() {
        #expect(Names.isValidFieldName("appName"))
        #expect(Names.isValidFieldName("x_1"))
        #expect(Names.isValidFieldName(Self.letters))
        #expect(!Names.isValidFieldName(Self.letters + "a"))
        for name in ["", "_x", "1x", "x-y", "x.y", "___recordID", "x y"] {
            #expect(!Names.isValidFieldName(name), "\(name)")
        }
    }

    @Test func containersAllowLettersDigitsDotDashUnderscoreUpTo255() {
        #expect(Names.isValidContainer("iCloud.com.mirxa.AppLocker"))
        #expect(Names.isValidContainer("com.mapplock.universal"))
        #expect(Names.isValidContainer("a-b_c.1"))
        #expect(Names.isValidContainer(Self.letters))
        #expect(!Names.isValidContainer(Self.letters + "a"))
        for name in ["", "iCloud.com:app", "iCloud/com", "i Cloud", "iCloud.cöm", "..%2F"] {
            #expect(!Names.isValidContainer(name), "\(name)")
        }
    }

    @Test func quotedNamesAreShortenedPast80Characters() {
        #expect(Names.quoted("abc") == "\"abc\"")
        let long = String(repeating: "x", count: 81)
        #expect(Names.quoted(long) == "\"" + String(repeating: "x", count: 80) + "…\"")
        #expect(Names.quoted(String(repeating: "y", count: 80)) == "\"" + String(repeating: "y", count: 80) + "\"")
    }
}
