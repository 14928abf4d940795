public import Foundation

/// HDR clips made from an SDR photograph of the shared corpus as ITU-R BT.2408 makes HDR from SDR
/// (Tests/Support/hdr-clips.py: HLG and PQ, BT.2020, SDR white at 203 cd/m²), beside the SDR frame
/// they must come back to and what ffmpeg's zscale + tonemap chain makes of them. Made once per test
/// process; skipped, with `skipReason`, without ffmpeg, the corpus or the test virtualenv's numpy.
public enum HDRClips {
  /// The footage: a phone photograph with sky, skin-free foliage and bright highlights.
  public static let photo = "phone/drewnoakes__Samsung_SM-G935L_Galaxy_S7_Edge_.jpg"

  /// The test virtualenv scripts/install-deps.sh makes (numpy and Pillow for the generator).
  public static let python: String = {
    let environment = ProcessInfo.processInfo.environment
    let cache = environment["XDG_CACHE_HOME"] ?? (NSHomeDirectory() + "/.cache")
    return (environment["THUMBD_TEST_VENV"] ?? (cache + "/thumbd/test-venv")) + "/bin/python"
  }()

  public static var isAvailable: Bool {
    VideoMatrix.isAvailable && SharedCorpus.isAvailable
      && FileManager.default.isExecutableFile(atPath: python)
  }
  public static let skipReason =
    "ffmpeg, ../shared/corpus or the test virtualenv (scripts/install-deps.sh) is missing: HDR clips skipped"

  public struct Clip: Decodable, Sendable, CustomStringConvertible {
    public var name: String
    /// "hlg" or "pq".
    public var transfer: String
    /// ffmpeg's tone-mapped frame (PNG) and how far it is from the SDR frame.
    public var ffmpeg: String
    public var ffmpegMad: Double
    public var ffmpegColourRatio: Double

    enum CodingKeys: String, CodingKey {
      case name, transfer, ffmpeg
      case ffmpegMad = "ffmpeg_mad"
      case ffmpegColourRatio = "ffmpeg_colour_ratio"
    }

    public var description: String { name }
  }

  struct Manifest: Decodable {
    var sdr: String
    var clips: [Clip]
  }

  public static let folder: URL? = {
    guard isAvailable, let root = SharedCorpus.root else { return nil }
    return HEIFMatrix.generatedFolder(
      script: "hdr-clips.py", name: "thumbd-hdr-clips", python: python,
      arguments: [root.appendingPathComponent(photo).path])
  }()

  private static var manifest: Manifest? {
    guard let folder, let data = try? Data(contentsOf: folder.appendingPathComponent("manifest.json")) else {
      return nil
    }
    return try? JSONDecoder().decode(Manifest.self, from: data)
  }

  public static var clips: [Clip] { manifest?.clips ?? [] }

  /// The SDR frame's file name (a PNG).
  public static var sdrFrame: String { manifest?.sdr ?? "sdr.png" }

  public static func bytes(_ name: String) throws -> [UInt8] {
    guard let folder else { throw CocoaError(.fileNoSuchFile) }
    return [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
  }
}
