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
    return HEIFMatrix.generatedFolder(script: "video-matrix.py", name: "thumbd-video-matrix")
  }()

  public static var cases: [Case] { GeneratedSamples.cases(in: folder) }

  public static func bytes(_ name: String) throws -> [UInt8] {
    try GeneratedSamples.bytes(name, in: folder)
  }
}
