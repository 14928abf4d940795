public import Foundation

/// The test files of the libraries thumbd reads GIF and JPEG XL with: Debian's libjxl-testdata
/// (/usr/share/libjxl-testdata) and giflib 5.2.1's pictures (pic/, tests/, doc/whatsinagif/, from its
/// source tarball), both put in place by scripts/install-deps.sh. Each is rendered and compared with
/// another decoder's picture (SuiteFileTests); skipped, with `skipReason`, when neither is there.
public enum SuiteFiles {
  public static let libjxlRoot = URL(fileURLWithPath: "/usr/share/libjxl-testdata")
  public static let giflibRoot: URL = {
    let environment = ProcessInfo.processInfo.environment
    let cache = environment["XDG_CACHE_HOME"] ?? (NSHomeDirectory() + "/.cache")
    return URL(fileURLWithPath: cache + "/thumbd/giflib-5.2.1")
  }()

  public static var isAvailable: Bool {
    !files.isEmpty && FileManager.default.isExecutableFile(atPath: HDRClips.python)
  }
  public static let skipReason =
    "libjxl-testdata, giflib's pictures or the test virtualenv are missing (scripts/install-deps.sh): skipped"

  /// Every .gif and .jxl under both roots, as paths.
  public static let files: [String] = {
    var found: [String] = []
    for root in [libjxlRoot, giflibRoot] {
      guard let walker = FileManager.default.enumerator(atPath: root.path) else { continue }
      for case let path as String in walker where path.hasSuffix(".gif") || path.hasSuffix(".jxl") {
        found.append(root.appendingPathComponent(path).path)
      }
    }
    return found.sorted()
  }()
}

/// Another decoder's picture of a file, the reference thumbd's own decode is compared with.
public enum ReferenceDecoder {
  /// Another decoder's picture of `path` as an 8-bit RGBA PNG: Pillow's (jxl-oxide for JPEG XL; `frame`,
  /// 0-based, of an animated GIF), or with `djxl`, libjxl's own command line. Nil when it cannot decode
  /// the file.
  public static func png(_ path: String, frame: Int = 0, djxl: Bool = false) throws -> [UInt8]? {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-suite-\(UUID())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let output = folder.appendingPathComponent("out.png")
    let process = Process()
    if djxl {
      process.executableURL = URL(fileURLWithPath: "/usr/bin/djxl")
      process.arguments = [path, output.path]
    } else {
      let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Support/pillow-decode.py")
      process.executableURL = URL(fileURLWithPath: HDRClips.python)
      process.arguments = [script.path, path, output.path, String(frame)]
    }
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    return [UInt8](try Data(contentsOf: output))
  }
}
