/// Whether a frame of an animation (a GIF's, an animated WebP's) is worth a still thumbnail while the
/// animation has more to show: a frame that is mostly one colour (nothing painted yet, a background
/// drawn first, a single pixel on a transparent canvas, a fade's first step) is passed over for the
/// next. Video keyframes go by `PosterChoice`, whose "flat" is the same idea on luma alone.
public enum FrameContent {
  /// The share of sampled pixels that must differ from the most common colour for a frame to count as
  /// showing something: a few percent of a picture is a drawing, one pixel in a thousand is not.
  public static let paintedShare = 0.02

  /// Samples about 4,096 pixels of premultiplied RGBA rows (every transparent pixel counts as one
  /// colour), or of RGB rows (`channels` 3), and tells whether nearly all are one colour.
  public static func isMostlyOneColour(
    rgba: UnsafeBufferPointer<UInt8>, width: Int, height: Int, stride: Int, channels: Int = 4
  ) -> Bool {
    guard width > 0, height > 0 else { return true }
    let pixels = width * height
    let step = max(1, pixels / 4096)
    var counts: [UInt32: Int] = [:]
    var samples = 0
    var i = 0
    while i < pixels {
      let at = (i / width) * stride + (i % width) * channels
      let alpha = channels == 4 ? rgba[at + 3] : 255
      let colour =
        alpha == 0
        ? 0
        : UInt32(rgba[at]) << 24 | UInt32(rgba[at + 1]) << 16 | UInt32(rgba[at + 2]) << 8 | UInt32(alpha)
      counts[colour, default: 0] += 1
      samples += 1
      i += step
    }
    let dominant = counts.values.max() ?? 0
    return Double(samples - dominant) < paintedShare * Double(samples)
  }
}
