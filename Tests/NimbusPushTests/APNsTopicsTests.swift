import Testing
import NimbusPush

@Suite struct APNsTopicsTests {
    @Test func aTopicMapGivesEachContainerItsBundleID() throws {
        let topics = try APNsTopics.parse("iCloud.com.example.AppLocker=com.example.AppLocker, iCloud.com.example.Clip = com.example.clip-board")
        #expect(topics.topic(for: "iCloud.com.example.AppLocker") == "com.example.AppLocker")
        #expect(topics.topic(for: "iCloud.com.example.Clip") == "com.example.clip-board")
        #expect(topics.topic(for: "iCloud.com.example.Other") == nil)
    }

    @Test(arguments: [
        ("", "'' is not CONTAINER=BUNDLE_ID"),
        ("iCloud.a=com.a,", "'' is not CONTAINER=BUNDLE_ID"),
        ("iCloud.a", "'iCloud.a' is not CONTAINER=BUNDLE_ID"),
        ("=com.a", "names no container"),
        ("iCloud.a=", "bundle id ''"),
        ("iCloud.a=com.a/b", "bundle id 'com.a/b'"),
        ("iCloud.a=com.a,iCloud.a=com.b", "names container iCloud.a twice"),
    ])
    func malformedTopicMapsAreRefusedNamingTheEntry(text: String, words: String) throws {
        let error = try #require(throws: APNsTopics.ParseError.self) { try APNsTopics.parse(text) }
        #expect(error.description.contains(words), "\(error)")
        #expect(error.description.contains("--apns-topics"))
    }
}
