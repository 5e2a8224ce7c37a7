// swift-tools-version:6.0
// libFuzzer targets for Nimbus's untrusted-input parsers, kept out of the main package so that its
// manifest stays free of unsafe flags and fuzz-only targets. Build and run: Tests/fuzz-smoke.sh
// (CI smoke run) and docs/fuzzing.md (longer runs).
//
// The code under test comes in through the symlinks Sources/{NimbusWire,NimbusSupport,CLinux,
// NimbusHTTP,NimbusCore} -> ../../Sources/...: the parsers are `package` API, which Swift only shows to
// modules of the same package, so a path dependency on ".." could not call them.
import PackageDescription

/// The main package's settings (the symlinked sources must compile exactly as they do there).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

/// A fuzz target: an executable whose `main` comes from libFuzzer (`--sanitize=fuzzer`), so its
/// one file is parsed as a library and defines only `LLVMFuzzerTestOneInput`.
func fuzzTarget(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(
        name: name,
        dependencies: dependencies,
        swiftSettings: swiftSettings + [.unsafeFlags(["-parse-as-library"])]
    )
}

let package = Package(
    name: "NimbusFuzz",
    platforms: [.macOS(.v15)],
    targets: [
        .target(name: "NimbusWire", swiftSettings: swiftSettings),
        .target(name: "NimbusSupport", dependencies: ["NimbusWire"], swiftSettings: swiftSettings),
        .systemLibrary(name: "CLinux"),
        .target(name: "NimbusHTTP", dependencies: ["NimbusSupport", "CLinux"], swiftSettings: swiftSettings),
        .target(name: "NimbusCore", dependencies: ["NimbusSupport"], swiftSettings: swiftSettings),
        .target(name: "FuzzSupport", dependencies: ["NimbusHTTP"], swiftSettings: swiftSettings),
        fuzzTarget("FuzzHTTPParser", ["FuzzSupport", "NimbusHTTP"]),
        fuzzTarget("FuzzChunked", ["FuzzSupport", "NimbusHTTP"]),
        fuzzTarget("FuzzRecordJSON", ["NimbusCore", "NimbusSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
