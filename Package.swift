// swift-tools-version:6.0
import PackageDescription

/// One settings array for every target: Swift 6 language mode everywhere.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

/// The HTTP core's release build skips Swift's run-time exclusivity checks: each connection's
/// state is touched by its event loop's thread only, and the checks were an eighth of the
/// instructions of a small exchange (docs/performance.md). Debug builds, which every test and
/// scenario runs, keep them. NimbusHTTP is in no library product, so NimbusKit stays usable as a
/// dependency (SwiftPM refuses unsafe flags in a dependency's products).
let httpCoreSettings = swiftSettings + [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "Nimbus",
    // The server is Linux-only (epoll); the minimums are the client library's (the apps' targets).
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .executable(name: "nimbus", targets: ["nimbus"]),
        .library(name: "NimbusKit", targets: ["NimbusKit"]),
        .library(name: "NimbusKitCK", targets: ["NimbusKitCK"]),
    ],
    dependencies: [],
    targets: [
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // HTTP/2 over TLS for APNs (Debian's libcurl is built with nghttp2 and OpenSSL) and ECDSA P-256
        // for its provider tokens: system libraries, as libpq is.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // What server and client share on the wire: JSON value, parser, writers and escapes, SHA-256 (and HMAC),
        // base64url. Foundation-free (libc only), so NimbusKit uses it without importing a server target.
        .target(name: "NimbusWire", swiftSettings: swiftSettings),
        .target(name: "NimbusSupport", dependencies: ["NimbusWire"], swiftSettings: swiftSettings),
        // Linux epoll/eventfd headers, which the Glibc module does not export (libc only, no package).
        .systemLibrary(name: "CLinux"),
        .target(name: "NimbusHTTP", dependencies: ["NimbusSupport", "CLinux"], swiftSettings: httpCoreSettings),
        .target(name: "NimbusPostgres", dependencies: ["NimbusSupport", "CLibPQ", "CLinux"], swiftSettings: swiftSettings),
        .target(name: "NimbusCore", dependencies: ["NimbusSupport"], swiftSettings: swiftSettings),
        // The APNs client: provider tokens and HTTP/2 sends; no database, no sync domain.
        .target(name: "NimbusPush", dependencies: ["NimbusSupport", "CCurl", "CCrypto"], swiftSettings: swiftSettings),
        // The publisher's push relay (`nimbus relay`): installations, signed requests, forwarding to APNs.
        .target(name: "NimbusRelay", dependencies: ["NimbusHTTP", "NimbusPush", "NimbusSupport"], swiftSettings: swiftSettings),
        .target(name: "NimbusStore", dependencies: ["NimbusCore", "NimbusPostgres", "NimbusSupport"], swiftSettings: swiftSettings),
        // The outbox's sender: the only code that joins the store (claims, outcomes) to APNs (curl).
        .target(name: "NimbusPushSender", dependencies: ["NimbusPush", "NimbusStore", "NimbusCore", "NimbusSupport"], swiftSettings: swiftSettings),
        .target(
            name: "NimbusAPI",
            // Not NimbusPostgres: the stores map database errors at their boundary.
            dependencies: ["NimbusHTTP", "NimbusCore", "NimbusStore", "NimbusSupport"],
            resources: [.embedInCode("Resources/openapi.json")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "NimbusAdmin",
            dependencies: ["NimbusAPI", "NimbusHTTP", "NimbusCore", "NimbusStore", "NimbusSupport"],
            // NegativeControl/Package.swift lists the same files.
            resources: ["index.html", "console.css", "console.js", "ui.js", "pages-server.js", "pages-devices.js", "pages-data.js",
                        "pages-operations.js", "pages-push.js"].map { .embedInCode("Resources/" + $0) },
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "nimbus",
            dependencies: ["NimbusAdmin", "NimbusAPI", "NimbusHTTP", "NimbusPush", "NimbusPushSender", "NimbusStore", "NimbusPostgres", "NimbusCore", "NimbusSupport", "CLinux",
                           "NimbusRelay"],
            swiftSettings: swiftSettings
        ),
        // The client side: Foundation and the shared NimbusWire, imports no server target (and no server target imports it).
        // SHA-256 of assets through libcrypto on Linux only (CryptoKit on Apple platforms).
        .target(name: "NimbusKit", dependencies: ["NimbusWire", .target(name: "CCrypto", condition: .when(platforms: [.linux]))], swiftSettings: swiftSettings),
        .target(name: "NimbusKitCK", dependencies: ["NimbusKit", "NimbusWire"], swiftSettings: swiftSettings),
        // The apps' code as they wrote it: Swift 5 language mode, the seed kept beside it as text.
        .executableTarget(
            name: "AppLockerSync",
            dependencies: ["NimbusKitCK"],
            path: "Examples/AppLockerSync",
            exclude: ["CloudKitManager.seed.swift.txt"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(
            name: "MappLockSync",
            dependencies: ["NimbusKitCK"],
            path: "Examples/MappLockSync",
            exclude: ["CloudSyncService.seed.swift.txt"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // Maccy's history (its SwiftData models) on NimbusKit's engine; the SwiftData adapter is
        // compiled only where SwiftData exists, Linux runs a file-backed store of the same shape.
        .executableTarget(
            name: "MaccySync",
            dependencies: ["NimbusKit"],
            path: "Examples/MaccySync",
            exclude: ["Storage.seed.swift.txt"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(
            name: "CKSyncEngineSample",
            dependencies: ["NimbusKitCK"],
            path: "Examples/CKSyncEngineSample",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(
            name: "nimbus-sync",
            dependencies: ["NimbusKit"],
            path: "Examples/NimbusSyncTool",
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "NimbusWireTests", dependencies: ["NimbusWire", "NimbusSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "NimbusSupportTests", dependencies: ["NimbusSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "NimbusHTTPTests", dependencies: ["NimbusHTTP", "NimbusSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "NimbusPostgresTests", dependencies: ["NimbusPostgres", "NimbusSupport", "NimbusHTTP"], swiftSettings: swiftSettings),
        .testTarget(name: "NimbusPushTests", dependencies: ["NimbusPush", "NimbusSupport", "CCrypto"], swiftSettings: swiftSettings),
        .testTarget(name: "NimbusPushSenderTests", dependencies: ["NimbusPushSender", "NimbusPush", "NimbusStore", "NimbusCore", "NimbusSupport", "NimbusTestSupport"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "NimbusCoreTests", dependencies: ["NimbusCore", "NimbusSupport"], swiftSettings: swiftSettings),
        // What the database tests share: a migrated throwaway database with an open store.
        .target(name: "NimbusTestSupport", dependencies: ["NimbusStore", "NimbusPostgres", "NimbusCore"], path: "Tests/NimbusTestSupport",
                swiftSettings: swiftSettings),
        .testTarget(name: "NimbusStoreTests", dependencies: ["NimbusStore", "NimbusPostgres", "NimbusTestSupport"], swiftSettings: swiftSettings),
        .testTarget(
            name: "NimbusAPITests",
            dependencies: ["NimbusAPI", "NimbusHTTP", "NimbusCore", "NimbusStore", "NimbusPostgres", "NimbusSupport", "NimbusTestSupport",
                           // The bodies our own clients write (ClientBodiesTests).
                           "NimbusKit", "NimbusKitCK"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "NimbusAdminTests",
            dependencies: ["NimbusAdmin", "NimbusAPI", "NimbusHTTP", "NimbusCore", "NimbusStore", "NimbusSupport", "NimbusTestSupport"],
            swiftSettings: swiftSettings
        ),
        // NimbusKitCK for the CloudKit-shaped encryptedValues test against the real server.
        .testTarget(name: "NimbusKitTests", dependencies: ["NimbusKit", "NimbusKitCK"], swiftSettings: swiftSettings),
        .testTarget(name: "NimbusKitCKTests", dependencies: ["NimbusKitCK", "NimbusKit"], swiftSettings: swiftSettings),
        .testTarget(name: "NimbusRelayTests", dependencies: ["NimbusRelay", "NimbusPush", "NimbusHTTP", "NimbusSupport"], swiftSettings: swiftSettings),
    ],
    swiftLanguageModes: [.v6]
)
