// swift-tools-version:6.0
// The negative control for the no-missed-change checker (docs/checker.md): the main package's
// server targets, with one file of NimbusStore swapped for a deliberately broken write strategy.
// Kept out of the main package so that no broken code is in Sources/. Build: NegativeControl/build.sh
// (it generates Sources/ as links into ../Sources).
import PackageDescription

/// The main package's settings (the linked sources must compile exactly as they do there).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "NimbusNegativeControl",
    platforms: [.macOS(.v13)],
    targets: [
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .target(name: "NimbusWire", swiftSettings: swiftSettings),
        .target(name: "NimbusSupport", dependencies: ["NimbusWire"], swiftSettings: swiftSettings),
        .systemLibrary(name: "CLinux"),
        .target(name: "NimbusHTTP", dependencies: ["NimbusSupport", "CLinux"], swiftSettings: swiftSettings),
        .target(name: "NimbusPostgres", dependencies: ["NimbusSupport", "CLibPQ", "CLinux"], swiftSettings: swiftSettings),
        .target(name: "NimbusCore", dependencies: ["NimbusSupport"], swiftSettings: swiftSettings),
        .target(name: "NimbusPush", dependencies: ["NimbusSupport", "CCurl", "CCrypto"], swiftSettings: swiftSettings),
        .target(name: "NimbusRelay", dependencies: ["NimbusHTTP", "NimbusPush", "NimbusSupport"], swiftSettings: swiftSettings),
        .target(name: "NimbusStore", dependencies: ["NimbusCore", "NimbusPostgres", "NimbusSupport"], swiftSettings: swiftSettings),
        .target(name: "NimbusPushSender", dependencies: ["NimbusPush", "NimbusStore", "NimbusCore", "NimbusSupport"], swiftSettings: swiftSettings),
        .target(name: "NimbusAPI", dependencies: ["NimbusHTTP", "NimbusCore", "NimbusStore", "NimbusSupport"],
                resources: [.embedInCode("Resources/openapi.json")], swiftSettings: swiftSettings),
        .target(name: "NimbusAdmin", dependencies: ["NimbusAPI", "NimbusHTTP", "NimbusCore", "NimbusStore", "NimbusSupport"],
                resources: ["index.html", "console.css", "console.js", "ui.js", "pages-server.js", "pages-devices.js", "pages-data.js",
                            "pages-operations.js", "pages-push.js"].map { .embedInCode("Resources/" + $0) },  // as in ../Package.swift
                swiftSettings: swiftSettings),
        .executableTarget(name: "nimbus",
                          dependencies: ["NimbusAdmin", "NimbusAPI", "NimbusHTTP", "NimbusPush", "NimbusPushSender", "NimbusStore", "NimbusPostgres",
                                         "NimbusCore", "NimbusSupport", "CLinux", "NimbusRelay"],  // as in ../Package.swift
                          swiftSettings: swiftSettings),
    ],
    swiftLanguageModes: [.v6]
)
