/// A video clip carried inside a still's file (a Motion Photo): where it lies, and what the file says of
/// the still's moment in it. Found by `EmbeddedClip.find` without decoding anything.
public struct EmbeddedClip: Sendable, Equatable {
  /// How the file says where the clip is.
  public enum Layout: String, Sendable {
    /// Samsung One UI 6 HEIC: a top-level `mpvd` box holds the clip.
    case samsungBox = "samsung-box"
    /// Samsung's trailer (SEF): a `MotionPhoto_Data` block after the picture, listed in a directory
    /// at the end of the file.
    case samsungTrailer = "samsung-trailer"
    /// Google's Motion Photo 1.0: XMP's `Container:Directory` lists the items appended to the still.
    case googleContainer = "google-container"
    /// Google's older Motion Photos: XMP's `GCamera:MicroVideoOffset`, bytes from the clip to the end.
    case googleMicroVideo = "google-microvideo"
  }

  /// The clip's first byte in the file.
  public var offset: Int
  public var length: Int
  public var layout: Layout
  /// Where the still was taken in the clip, microseconds from its start, when the file says.
  public var stillMicroseconds: Int?

  public init(offset: Int, length: Int, layout: Layout, stillMicroseconds: Int? = nil) {
    self.offset = offset
    self.length = length
    self.layout = layout
    self.stillMicroseconds = stillMicroseconds
  }

  public var range: Range<Int> { offset..<(offset + length) }

  /// What a still's file says of an embedded clip.
  public enum Finding: Sendable, Equatable {
    /// Nothing: a plain still.
    case none
    case clip(EmbeddedClip)
    /// The file claims a clip that is not where it says (a length past the end, an offset into the
    /// picture, bytes that are no video): the still is rendered alone, with this said of it.
    case unreadable(String)
  }

  /// The clip of a JPEG or HEIF file held whole. A box or Samsung's trailer wins over XMP: real One UI
  /// files carry XMP lengths that are wrong. Every place is checked against the file and must begin an
  /// ISO media file (`ftyp`), so that nothing is read outside the file or taken for a clip that is not.
  public static func find(in bytes: [UInt8], format: ImageFormat) -> Finding {
    guard format == .jpeg || format == .heif else { return .none }
    let xmp = XMPMotion(MotionXMP.packet(in: bytes, format: format) ?? "")
    var claims: [Claim] = []
    if format == .heif { claims.append(SamsungMotion.box(in: bytes)) }
    claims.append(SamsungMotion.trailer(in: bytes))
    claims.append(xmp.container(fileSize: bytes.count))
    claims.append(xmp.microVideo(fileSize: bytes.count))
    var refusals: [String] = []
    for claim in claims {
      switch claim {
      case .none: continue
      case .refused(let why): refusals.append(why)
      case .at(let offset, let length, let layout):
        guard let clip = checked(offset, length, in: bytes) else {
          refusals.append("the \(layout.rawValue) clip at bytes \(offset)+\(length) is not a video")
          continue
        }
        return .clip(
          EmbeddedClip(
            offset: clip.lowerBound, length: clip.count, layout: layout,
            stillMicroseconds: xmp.stillMicroseconds))
      }
    }
    return refusals.isEmpty ? .none : .unreadable(refusals.joined(separator: "; "))
  }

  /// A place one layout gives.
  enum Claim {
    case none
    case at(offset: Int, length: Int, layout: Layout)
    case refused(String)
  }

  /// The range, when it lies inside the file after its first byte and begins with an `ftyp` box.
  static func checked(_ offset: Int, _ length: Int, in bytes: [UInt8]) -> Range<Int>? {
    guard offset > 0, length >= 16, offset <= bytes.count, length <= bytes.count - offset else { return nil }
    guard bytes[(offset + 4)..<(offset + 8)].elementsEqual("ftyp".utf8) else { return nil }
    return offset..<(offset + length)
  }
}
