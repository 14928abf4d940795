public import Foundation

/// The generated HEIF matrix (Tests/Support/heif-matrix.py): pictures coded by the x265 command line in
/// containers that state every combination of size, range, matrix, chroma, depth and transform the HEVC
/// route must agree with libheif on. Made once per test process into a temporary folder; tests are
/// skipped, with `skipReason`, where `x265` or `ffmpeg` is missing (scripts/install-deps.sh installs both).
public enum HEIFMatrix {
  public static let tools = ["x265", "ffmpeg"]
  public static var isAvailable: Bool { tools.allSatisfy { which($0) != nil } }
  public static let skipReason =
    "x265 or ffmpeg is not installed (scripts/install-deps.sh): HEIF matrix skipped"

  /// The folder with the files, made on first use.
  public static let folder: URL? = {
    guard isAvailable else { return nil }
    return generatedFolder(script: "heif-matrix.py", name: "thumbd-heif-matrix")
  }()

  /// Runs Tests/Support/`script` with `python`, a new temporary folder (`name`-pid) and `arguments` as
  /// its arguments: the folder, or nil when the script failed.
  public static func generatedFolder(
    script: String, name: String, python: String = "python3", arguments: [String] = []
  ) -> URL? {
    let out = FileManager.default.temporaryDirectory.appendingPathComponent(
      "\(name)-\(ProcessInfo.processInfo.processIdentifier)")
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Support/\(script)")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [python, path.path, out.path] + arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return nil }
    process.waitUntilExit()
    return process.terminationStatus == 0 ? out : nil
  }

  /// The case names, sorted (empty when the matrix could not be made).
  public static var names: [String] {
    guard let folder,
      let files = try? FileManager.default.contentsOfDirectory(atPath: folder.path)
    else { return [] }
    return files.filter { $0.hasSuffix(".heic") }.map { String($0.dropLast(5)) }.sorted()
  }

  public static func bytes(_ name: String) throws -> [UInt8] {
    guard let folder else { throw CocoaError(.fileNoSuchFile) }
    return [UInt8](try Data(contentsOf: folder.appendingPathComponent(name + ".heic")))
  }

  /// The file whose libheif decode shows what `name` should look like: `name` itself, or a companion
  /// where libheif 1.15 departs from HEIF (Tests/Support/heif-matrix.py says where).
  public static func referenceBytes(_ name: String) throws -> [UInt8] {
    guard let folder else { throw CocoaError(.fileNoSuchFile) }
    let companion = folder.appendingPathComponent(name + ".reference.heif")
    if FileManager.default.fileExists(atPath: companion.path) {
      return [UInt8](try Data(contentsOf: companion))
    }
    return try bytes(name)
  }

  public static func which(_ tool: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(tool)" }.first {
      FileManager.default.isExecutableFile(atPath: $0)
    }
  }
}
