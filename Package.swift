// swift-tools-version: 6.0
// thumbd: a distributed thumbnail worker. Module layout follows the data flow (docs/architecture.md):
// C libraries behind one small target each, pure logic in ThumbCore, I/O in the stage modules.
import PackageDescription

let strict: [SwiftSetting] = [
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("InternalImportsByDefault"),
]

#if arch(x86_64)
  let imagingFlags: [SwiftSetting] = [
    .unsafeFlags(["-O"], .when(configuration: .debug)), .unsafeFlags(["-target-cpu", "haswell"]),
  ]
#else
  let imagingFlags: [SwiftSetting] = [.unsafeFlags(["-O"], .when(configuration: .debug))]
#endif

let package = Package(
  name: "thumbd",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "thumbd", targets: ["thumbd"])
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
    .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
    .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
    .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
    .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
  ],
  targets: [
    // One target per C library. System libraries are found through pkg-config.
    .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
    .systemLibrary(name: "CLibCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
    .systemLibrary(
      name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
    .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
    .systemLibrary(name: "CLibHeif", pkgConfig: "libheif", providers: [.apt(["libheif-dev"])]),
    .systemLibrary(name: "CSpng", pkgConfig: "spng", providers: [.apt(["libspng-dev"])]),
    .systemLibrary(name: "CWebP", pkgConfig: "libwebpdemux", providers: [.apt(["libwebp-dev"])]),
    // No pkgConfig: libjxl.pc adds -DHWY_SHARED_DEFINE, a flag SwiftPM refuses; its headers are in
    // /usr/include.
    .systemLibrary(name: "CJXL", providers: [.apt(["libjxl-dev"])]),
    .systemLibrary(name: "CLCMS2", pkgConfig: "lcms2", providers: [.apt(["liblcms2-dev"])]),
    .systemLibrary(name: "CLibAVCodec", pkgConfig: "libavcodec", providers: [.apt(["libavcodec-dev"])]),
    // libavcodec's HEVC decoder as a libheif decoder plugin: HEIC decodes faster than with libde265.
    .target(
      name: "CHEVCDecoder", dependencies: ["CLibHeif", "CLibAVCodec"],
      linkerSettings: [.linkedLibrary("avcodec"), .linkedLibrary("avutil")]),
    // Video originals: libavformat demuxes from memory, libavcodec decodes the keyframes (C: libavformat's
    // structs and callbacks are far simpler to drive from C than through Swift's importer).
    .target(
      name: "CVideoDecoder", dependencies: ["CLibAVCodec"],
      linkerSettings: [.linkedLibrary("avformat"), .linkedLibrary("avcodec"), .linkedLibrary("avutil")]),
    // GIF through giflib: frames composited onto the canvas as browsers do.
    .target(name: "CGIFDecoder", linkerSettings: [.linkedLibrary("gif")]),
    // curl_easy_setopt/getinfo are variadic, which Swift cannot call: typed wrappers live here.
    .target(name: "CCurlShim", dependencies: ["CLibCurl"]),
    // mallopt (whose header Swift's Glibc module leaves out) and the CPU feature check.
    .target(name: "CPlatform"),

    // Pure logic, no I/O: profiles, planning, geometry, EXIF, errors, retry policy.
    .target(name: "ThumbCore", swiftSettings: strict),
    // Runs blocking C calls on threads of our own, off Swift's cooperative pool.
    .target(name: "Blocking", swiftSettings: strict),
    // The worker's two gates: job memory (`--memory-budget`, downloads and decodes) and anything else
    // admitted by weight, first come first served.
    .target(name: "Admission", dependencies: ["ThumbCore"], swiftSettings: strict),
    // SHA-256 (OpenSSL's libcrypto): content-addressed keys, render keys, S3 payload hashes.
    .target(name: "Hashing", dependencies: ["CLibCrypto"], swiftSettings: strict),
    .target(
      name: "Imaging",
      dependencies: [
        "ThumbCore", "CTurboJPEG", "CLibHeif", "CHEVCDecoder", "CVideoDecoder", "CGIFDecoder", "CSpng",
        "CWebP", "CJXL", "CLCMS2",
      ],
      // Optimised in debug builds too: unoptimised SIMD code is a hundred times slower, and the tests
      // (built in debug) resample real photographs. On x86-64, compiled for AVX2 and FMA (Haswell, 2013,
      // and later: 8-lane fused multiply-adds in the resampler); `thumbd` checks the CPU before using it.
      swiftSettings: strict + imagingFlags),
    .target(
      name: "Queue",
      dependencies: ["ThumbCore", "Blocking", "CLibPQ", .product(name: "Logging", package: "swift-log")],
      // The statements' source: compiled into Generated/Statements.swift by scripts/gen-sql.py.
      exclude: ["SQL"],
      swiftSettings: strict),
    // libcurl's multi interface on one thread: every HTTP transfer of a process, downloads and uploads.
    .target(name: "Transport", dependencies: ["CCurlShim", "Blocking"], swiftSettings: strict),
    .target(
      name: "Fetch",
      dependencies: [
        "ThumbCore", "Blocking", "Admission", "Hashing", "CCurlShim", "Transport", "Storage",
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),
    .target(
      name: "Storage", dependencies: ["ThumbCore", "Blocking", "Hashing", "Transport"],
      swiftSettings: strict),
    .target(
      name: "Worker",
      dependencies: [
        "ThumbCore", "Blocking", "Admission", "Hashing", "Imaging", "Queue", "Fetch", "Storage", "Transport",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "Metrics", package: "swift-metrics"),
        .product(name: "Prometheus", package: "swift-prometheus"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "Yams", package: "Yams"),
      ],
      swiftSettings: strict),
    // `thumbd console`: the operators' web pages, rendered on the server.
    .target(
      name: "Console",
      dependencies: [
        "ThumbCore", "Blocking", "Hashing", "Queue", "Storage", "Transport",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "Hummingbird", package: "hummingbird"),
      ],
      // The statements' source: compiled into Generated/ConsoleStatements.swift by scripts/gen-sql.py.
      exclude: ["SQL"],
      swiftSettings: strict),
    .executableTarget(
      name: "thumbd",
      dependencies: [
        "ThumbCore", "Blocking", "Imaging", "Queue", "Worker", "Storage", "Transport", "CPlatform", "Console",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
      ],
      // `thumbd bench`'s statements: read by scripts/gen-sql.py into Generated/, not bundled.
      exclude: ["SQL"],
      swiftSettings: strict),

    // What more than one test target needs: the ../shared corpus locator, image comparison.
    .target(
      name: "TestSupport", dependencies: ["Imaging"], path: "Tests/TestSupport", swiftSettings: strict),
    .testTarget(
      name: "ThumbCoreTests", dependencies: ["ThumbCore", "TestSupport"],
      // Inputs the fuzzer kept (fuzz/run.sh): read from disk by FuzzRegressionTests, not bundled.
      exclude: ["FuzzCorpus"], swiftSettings: strict),
    .testTarget(
      name: "ImagingTests",
      // The C libraries directly too: the tests write PNG, WebP, CMYK JPEG and ICC profiles of their own.
      dependencies: [
        "Imaging", "ThumbCore", "TestSupport", "CSpng", "CWebP", "CLCMS2", "CTurboJPEG", "CHEVCDecoder",
      ],
      swiftSettings: strict),
    // One test target per source target, for the tests that need no server; the tests that start
    // PostgreSQL, an origin, an S3 server, workers or a browser are in IntegrationTests.
    .testTarget(name: "AdmissionTests", dependencies: ["Admission", "TestSupport"], swiftSettings: strict),
    .testTarget(name: "BlockingTests", dependencies: ["Blocking"], swiftSettings: strict),
    .testTarget(name: "HashingTests", dependencies: ["Hashing"], swiftSettings: strict),
    .testTarget(name: "QueueTests", dependencies: ["Queue"], swiftSettings: strict),
    .testTarget(name: "ConsoleTests", dependencies: ["Console"], swiftSettings: strict),
    .testTarget(name: "StorageTests", dependencies: ["Storage", "ThumbCore"], swiftSettings: strict),
    // The worker's pieces that need no server: the options model, the log formats, the services with
    // statements of the tests' own (the test kit stops a service as its group would).
    .testTarget(
      name: "WorkerTests",
      dependencies: [
        "Worker", "Storage",
        .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "IntegrationTests",
      dependencies: [
        "Worker", "Queue", "Fetch", "Storage", "Transport", "Imaging", "ThumbCore", "Blocking", "Admission",
        "Hashing", "TestSupport", "Console",
        // A LISTEN client of the tests' own, that keeps each notification's payload.
        "CLibPQ",
        // `thumbd bench`'s own statements (BenchSQL) are checked against the schema with the others.
        "thumbd",
        // Reads the deploy/ manifests.
        .product(name: "Yams", package: "Yams"),
      ],
      swiftSettings: strict),
  ],
  swiftLanguageModes: [.v6]
)
