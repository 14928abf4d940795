/// What a GIF declares, read from its blocks without decompressing anything: the canvas, how many frames
/// it has, and whether anything of it can be transparent. The limits and the memory cost are decided on
/// this before giflib allocates (a canvas declared at 65535x65535, a 10,000-frame file of a few KB).
public struct GIFStructure: Sendable, Equatable {
  public var canvas: PixelSize
  /// Frames up to the trailer, or up to where the blocks stop making sense.
  public var frames: Int
  /// A frame has a transparent colour or is cleared once shown, or the first frame leaves part of the
  /// canvas unpainted.
  public var transparent: Bool
  /// The largest frame's declared area in pixels: decompressing a frame costs its whole area, clipped
  /// to the canvas or not.
  public var largestFrame: Int = 0
  /// The declared areas of the first frames (up to `recordedFrames`), in order.
  public var frameAreas: [Int] = []
  public static let recordedFrames = 64
  /// How many times an animation plays, from its NETSCAPE2.0 (or ANIMEXTS1.0) loop block: 0 is for ever.
  /// Nil without one: browsers then play it once.
  public var loopCount: Int?

  public init(
    canvas: PixelSize, frames: Int, transparent: Bool, largestFrame: Int = 0, frameAreas: [Int] = []
  ) {
    self.canvas = canvas
    self.frames = frames
    self.transparent = transparent
    self.largestFrame = largestFrame
    self.frameAreas = frameAreas
  }

  /// Nil when the bytes are not a GIF's header and screen descriptor.
  public static func read(_ bytes: [UInt8]) -> GIFStructure? {
    guard bytes.count >= 13, bytes[0..<3].elementsEqual("GIF".utf8) else { return nil }
    func le16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
    let canvas = PixelSize(width: le16(6), height: le16(8))
    var result = GIFStructure(canvas: canvas, frames: 0, transparent: false)
    var i = 13
    if bytes[10] & 0x80 != 0 { i += 3 << (Int(bytes[10] & 7) + 1) }
    /// Past a run of data sub-blocks (each a length byte, then that many bytes; a zero length ends it).
    func skipSubBlocks(_ start: Int) -> Int? {
      var at = start
      while at < bytes.count {
        let length = Int(bytes[at])
        at += 1 + length
        if length == 0 { return at }
      }
      return nil
    }
    while i < bytes.count {
      switch bytes[i] {
      case 0x21:
        // An extension. A graphic control says whether the next frame has a transparent colour, and
        // whether it is cleared once shown (disposal 2: to transparent, as browsers do).
        guard i + 2 < bytes.count else { return result }
        if bytes[i + 1] == 0xF9, bytes[i + 2] >= 4, i + 3 < bytes.count,
          bytes[i + 3] & 1 != 0 || (bytes[i + 3] >> 2) & 7 == 2
        {
          result.transparent = true
        }
        if bytes[i + 1] == 0xFF, i + 18 < bytes.count, bytes[i + 2] == 11,
          bytes[(i + 3)..<(i + 14)].elementsEqual("NETSCAPE2.0".utf8)
            || bytes[(i + 3)..<(i + 14)].elementsEqual("ANIMEXTS1.0".utf8),
          bytes[i + 14] >= 3, bytes[i + 15] == 1
        {
          result.loopCount = le16(i + 16)
        }
        guard let next = skipSubBlocks(i + 2) else { return result }
        i = next
      case 0x2C:  // a frame
        guard i + 10 < bytes.count else { return result }
        let (left, top, width, height) = (le16(i + 1), le16(i + 3), le16(i + 5), le16(i + 7))
        if result.frames == 0,
          left > 0 || top > 0 || left + width < canvas.width || top + height < canvas.height
        {
          result.transparent = true
        }
        result.largestFrame = max(result.largestFrame, width * height)
        if result.frameAreas.count < Self.recordedFrames { result.frameAreas.append(width * height) }
        var at = i + 10
        if bytes[i + 9] & 0x80 != 0 { at += 3 << (Int(bytes[i + 9] & 7) + 1) }
        result.frames += 1
        guard let next = skipSubBlocks(at + 1) else { return result }
        i = next
      default:  // the trailer (0x3B), or bytes that are no block
        return result
      }
    }
    return result
  }
}
