public import Foundation

/// HDR stills (HEIC, AVIF and, when Debian's cjxl can, JPEG XL; PQ and HLG, BT.2020) made from an SDR
/// photograph of the shared corpus as ITU-R BT.2408 makes HDR from SDR (Tests/Support/hdr-stills.py:
/// sRGB to light, SDR white at 203 cd/m²), beside the SDR picture they must come back to. Made once per
/// test process; skipped, with `skipReason`, without the tools, the corpus or the test virtualenv.
public enum HDRStills {
  public static var isAvailable: Bool {
    ["heif-info", "heif-convert", "avifenc"].allSatisfy { HEIFMatrix.which($0) != nil }
      && HDRClips.isAvailable
  }
  public static let skipReason =
    "libheif-examples, avifenc, ffmpeg, ../shared/corpus or the test virtualenv (scripts/install-deps.sh) is missing: HDR stills skipped"

  public struct Still: Decodable, Sendable, CustomStringConvertible {
    public var name: String
    /// "pq" or "hlg".
    public var transfer: String
    /// heif, avif or jxl.
    public var format: String
    /// How far the code values taken as SDR are from the SDR picture, and with how much of its colour.
    public var untouchedMad: Double
    public var untouchedColourRatio: Double

    enum CodingKeys: String, CodingKey {
      case name, transfer, format
      case untouchedMad = "untouched_mad"
      case untouchedColourRatio = "untouched_colour_ratio"
    }

    public var description: String { name }
  }

  struct Manifest: Decodable {
    var sdr: String
    var stills: [Still]
  }

  public static let folder: URL? = {
    guard isAvailable, let root = SharedCorpus.root else { return nil }
    return HEIFMatrix.generatedFolder(
      script: "hdr-stills.py", name: "thumbd-hdr-stills", python: HDRClips.python,
      arguments: [root.appendingPathComponent(HDRClips.photo).path])
  }()

  private static var manifest: Manifest? {
    guard let folder, let data = try? Data(contentsOf: folder.appendingPathComponent("manifest.json")) else {
      return nil
    }
    return try? JSONDecoder().decode(Manifest.self, from: data)
  }

  public static var stills: [Still] { manifest?.stills ?? [] }
  public static var sdrPicture: String { manifest?.sdr ?? "sdr.png" }

  public static func bytes(_ name: String) throws -> [UInt8] {
    guard let folder else { throw CocoaError(.fileNoSuchFile) }
    return [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
  }
}
