public import Foundation

/// The generated motion photos (Tests/Support/motion-samples.py): stills that carry a 3 s clip in each
/// layout phones write (Google's Motion Photo container and older MicroVideo XMP, Samsung's SEF trailer
/// and One UI 6 `mpvd` box), both halves of a Live Photo, and damaged or lying files that must render as
/// plain stills, with what thumbd must make of each (`Case`). Made once per test process into a temporary
/// folder; tests are skipped, with `skipReason`, where `ffmpeg` or `heif-enc` is missing
/// (scripts/install-deps.sh installs both).
public enum MotionSamples {
  public static let tools = ["ffmpeg", "heif-enc"]
  public static var isAvailable: Bool { tools.allSatisfy { HEIFMatrix.which($0) != nil } }
  public static let skipReason =
    "ffmpeg or heif-enc is not installed (scripts/install-deps.sh): motion samples skipped"

  public struct Case: Decodable, Sendable, CustomStringConvertible {
    public var name: String
    /// The layout the file states: "google-container", "google-microvideo", "samsung-trailer",
    /// "samsung-mpvd", "live-photo" or "none". A damaged file keeps the layout it claims, so a test can
    /// tell which parser had to turn it down.
    public var layout: String
    /// "motion" (a still with a clip to find), "still" (no clip may be found: render the still alone) or
    /// "video" (a Live Photo's MOV, rendered as a video).
    public var expect: String
    /// Where the clip's first byte (its `ftyp` box) lies in the file; nil for stills.
    public var offset: Int?
    /// The clip's byte count: `offset + length` is where it ends (for Samsung's trailer, where the SEFH
    /// directory starts). Nil for stills.
    public var length: Int?
    /// The clip's duration as ffprobe reads it, in milliseconds.
    public var durationMs: Int?
    /// "h264" or "hevc", as ffprobe names the clip's codec.
    public var codec: String?
    /// The still's presentation timestamp in the clip as the XMP states it (also for the lying files
    /// whose clip must not be used); nil when the file states none (Samsung, Live Photos).
    public var stillUs: Int?
    /// The Live Photo content identifier, in the MOV's QuickTime metadata or the still's Apple MakerNote.
    public var livePhotoID: String?
    public var note: String

    enum CodingKeys: String, CodingKey {
      case name, layout, expect, offset, length, codec, note
      case durationMs = "duration_ms"
      case stillUs = "still_us"
      case livePhotoID = "live_photo_id"
    }

    public var description: String { name }
  }

  public static let folder: URL? = {
    guard isAvailable else { return nil }
    return HEIFMatrix.generatedFolder(script: "motion-samples.py", name: "thumbd-motion-samples")
  }()

  public static var cases: [Case] { GeneratedSamples.cases(in: folder) }

  /// The bytes of a file in the folder: a case's, or one of the clips alone ("clip-h264.mp4",
  /// "clip-hevc.mp4") to compare a found clip with.
  public static func bytes(_ name: String) throws -> [UInt8] {
    try GeneratedSamples.bytes(name, in: folder)
  }
}
