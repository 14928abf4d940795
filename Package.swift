// swift-tools-version: 6.0
// thumbd: a distributed thumbnail worker. Module layout follows the data flow (docs/architecture.md):
// C libraries behind one small target each, pure logic in ThumbCore, I/O in the stage modules.
import PackageDescription

let strict: [SwiftSetting] = [
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
  name: "thumbd",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "thumbd", targets: ["thumbd"])
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
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
    .systemLibrary(name: "CLCMS2", pkgConfig: "lcms2", providers: [.apt(["liblcms2-dev"])]),
    // curl_easy_setopt/getinfo are variadic, which Swift cannot call: typed wrappers live here.
    .target(name: "CCurlShim", dependencies: ["CLibCurl"]),
    // mallopt, whose header Swift's Glibc module leaves out.
    .target(name: "CMallocShim"),

    // Pure logic, no I/O: profiles, planning, geometry, EXIF, errors, retry policy.
    .target(name: "ThumbCore", swiftSettings: strict),
    // Runs blocking C calls on threads of our own, off Swift's cooperative pool.
    .target(name: "Blocking", swiftSettings: strict),
    .target(
      name: "Imaging", dependencies: ["ThumbCore", "CTurboJPEG", "CLibHeif", "CSpng", "CWebP", "CLCMS2"],
      // Optimised in debug builds too: unoptimised SIMD code is a hundred times slower, and the tests
      // (built in debug) resample real photographs.
      swiftSettings: strict + [.unsafeFlags(["-O"], .when(configuration: .debug))]),
    .target(
      name: "Queue",
      dependencies: ["ThumbCore", "Blocking", "CLibPQ", .product(name: "Logging", package: "swift-log")],
      swiftSettings: strict),
    .target(
      name: "Fetch",
      dependencies: ["ThumbCore", "Blocking", "CCurlShim", .product(name: "Logging", package: "swift-log")],
      swiftSettings: strict),
    .target(name: "Storage", dependencies: ["ThumbCore", "Blocking", "CLibCrypto"], swiftSettings: strict),
    .target(
      name: "Worker",
      dependencies: [
        "ThumbCore", "Blocking", "Imaging", "Queue", "Fetch", "Storage",
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),
    .executableTarget(
      name: "thumbd",
      dependencies: [
        "ThumbCore", "Blocking", "Imaging", "Queue", "Worker", "Storage", "CMallocShim",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),

    // What more than one test target needs: the ../shared corpus locator, image comparison.
    .target(
      name: "TestSupport", dependencies: ["Imaging"], path: "Tests/TestSupport", swiftSettings: strict),
    .testTarget(name: "ThumbCoreTests", dependencies: ["ThumbCore", "TestSupport"], swiftSettings: strict),
    .testTarget(
      name: "ImagingTests", dependencies: ["Imaging", "ThumbCore", "TestSupport"], swiftSettings: strict),
    .testTarget(
      name: "IntegrationTests",
      dependencies: [
        "Worker", "Queue", "Fetch", "Storage", "Imaging", "ThumbCore", "Blocking", "TestSupport",
      ],
      swiftSettings: strict),
  ],
  swiftLanguageModes: [.v6]
)
