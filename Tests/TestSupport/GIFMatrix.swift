public import Foundation

/// The generated GIF matrix (Tests/Support/gif-matrix.py, Pillow and a small encoder of its own): static,
/// transparent, interlaced and animated GIFs with local palettes, disposals, frames overhanging the
/// canvas, bombs and damaged files, each with what thumbd must make of it and, for pictures, the
/// composited frame a browser shows (`reference`). Made once per test process; skipped, with
/// `skipReason`, without the test virtualenv's Pillow.
public enum GIFMatrix {
  public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: HDRClips.python) }
  public static let skipReason =
    "the test virtualenv (scripts/install-deps.sh) is missing: GIF matrix skipped"

  public struct Case: Decodable, Sendable, CustomStringConvertible {
    public var name: String
    /// "picture", or the error codes it may end with; "picture|corrupt_image" when either is right.
    public var expect: String
    /// The composited frame thumbd shows (0-based), and its picture (RGBA PNG).
    public var frame: Int?
    public var reference: String?
    public var size: [Int]?
    public var note: String?
    /// Animations of up to 32 frames: every frame as it plays (the composited canvas, RGBA PNG, and how
    /// long a browser shows it), and the NETSCAPE loop count (nil without one).
    public var animation: [PlayedFrame]?
    public var loop: Int?

    public var description: String { name }
  }

  public struct PlayedFrame: Decodable, Sendable {
    public var reference: String
    /// Milliseconds.
    public var duration: Int
  }

  public static let folder: URL? = {
    guard isAvailable else { return nil }
    return HEIFMatrix.generatedFolder(
      script: "gif-matrix.py", name: "thumbd-gif-matrix", python: HDRClips.python)
  }()

  public static var cases: [Case] { GeneratedSamples.cases(in: folder) }

  public static func bytes(_ name: String) throws -> [UInt8] {
    try GeneratedSamples.bytes(name, in: folder)
  }
}
