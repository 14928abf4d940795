public import Foundation

/// The generated video matrix (Tests/Support/video-matrix.py): short clips of ffmpeg's test patterns in
/// the containers and codecs phones write, with what thumbd must make of each (`Case`). Made once per
/// test process into a temporary folder; tests are skipped, with `skipReason`, where `ffmpeg` is missing
/// (scripts/install-deps.sh installs it).
public enum VideoMatrix {
  public static var isAvailable: Bool { HEIFMatrix.which("ffmpeg") != nil }
  public static let skipReason = "ffmpeg is not installed (scripts/install-deps.sh): video matrix skipped"

  public struct Case: Decodable, Sendable, CustomStringConvertible {
    public var name: String
    /// "poster", or the error codes it may end with ("unsupported_format|corrupt_image"); "poster|..."
    /// when either is right (a damaged file renders what decodes).
    public var expect: String
    /// The upright display size of the poster.
    public var upright: [Int]?
    /// The poster's keyframe comes after this many seconds (it skipped what came before).
    public var posterAfter: Double?
    public var note: String

    enum CodingKeys: String, CodingKey {
      case name, expect, upright, note
      case posterAfter = "poster_after"
    }

    public var description: String { name }
  }

  public static let folder: URL? = {
    guard isAvailable else { return nil }
    let out = FileManager.default.temporaryDirectory.appendingPathComponent(
      "thumbd-video-matrix-\(ProcessInfo.processInfo.processIdentifier)")
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Support/video-matrix.py")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", script.path, out.path]
    process.standardOutput = FileHandle.nullDevice
    do { try process.run() } catch { return nil }
    process.waitUntilExit()
    return process.terminationStatus == 0 ? out : nil
  }()

  public static var cases: [Case] {
    guard let folder, let data = try? Data(contentsOf: folder.appendingPathComponent("manifest.json")) else {
      return []
    }
    return (try? JSONDecoder().decode([Case].self, from: data)) ?? []
  }

  public static func bytes(_ name: String) throws -> [UInt8] {
    guard let folder else { throw CocoaError(.fileNoSuchFile) }
    return [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
  }
}
